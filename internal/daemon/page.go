package daemon

import (
	"net"
	"strings"
)

// PageURL is the operators' /ui page, for a start-up log line or a link: at
// the configured public URL, else at addr (the listener's address, with
// localhost for an unspecified host), https when secure.
func PageURL(configured string, addr net.Addr, secure bool) string {
	return strings.TrimSuffix(publicURL(configured, addr, secure), "/") + "/ui"
}
