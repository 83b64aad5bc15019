package daemon

import (
	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/overlay"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
	"github.com/questiond/questiond/internal/sse"
)

// The option types Config is made of, under names of their own here, so
// that whoever fills a Config (cmd/questiond) imports this package alone
// and not each part behind it. They are aliases: the parts document them.
type (
	APIOptions      = httpapi.Options    // Config.API
	APIAuth         = httpapi.Auth       // APIOptions.Auth
	APILimits       = httpapi.Limits     // APIOptions.Limits
	SchemaOptions   = elicit.Options     // APIOptions.Elicit
	EventOptions    = sse.Options        // Config.Events
	StoreOptions    = pending.Options    // Config.Store
	SessionOptions  = session.Options    // Config.Sessions
	Capability      = session.Capability // SessionOptions.Default
	NotifyOptions   = notify.Options     // Config.Notify
	ConnOptions     = connguard.Options  // Config.Conns
	UpstreamOptions = overlay.Options    // APIOptions.Upstream
)

// CheckUpstreamURL reports whether u can be the OpenCode server questiond
// is in front of (APIOptions.Upstream.URL).
func CheckUpstreamURL(u string) error {
	_, err := overlay.ParseURL(u)
	return err
}

// CheckWebhookURL reports whether u can be a webhook (Config.Notify.URLs)
// or Config.PublicURL: an absolute http or https URL, as the notifier
// checks it. Its error never quotes u, which may hold a token.
func CheckWebhookURL(u string) error { return notify.CheckURL(u) }
