package bridge

import (
	"os/exec"
	"strings"

	"github.com/questiond/questiond/internal/ident"
)

// credentialPrefix starts the names of questiond's own environment
// variables (QUESTIOND_TOKEN, QUESTIOND_SERVER, …).
const credentialPrefix = "QUESTIOND_"

// Command is the upstream server's process, run with environ less
// questiond's variables: the bridge's token is for questiond, never for the
// server it relays.
func Command(name string, args []string, environ []string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(strings.ToUpper(kv), credentialPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// SessionID is the questiond session a bridge named name, started in
// directory dir, asks in: the same across restarts of the bridge, the host
// and questiond, and another for another name or project.
func SessionID(name, dir string) string {
	return ident.Derived(ident.Session, "questiond bridge\x00"+name+"\x00"+dir)
}
