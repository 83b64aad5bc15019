package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/questiond/questiond/client"
)

// Exit statuses of `questiond ask`: a script branches on them.
const (
	askAccepted  = 0
	askFailed    = 1
	askUsage     = 2
	askDeclined  = 3
	askCancelled = 4
	askGone      = 5
)

const (
	defaultAskKey  = "answer"
	askUsageFooter = "Run 'questiond ask --help' for the flags and exit statuses."
)

const askUsageHeader = `questiond ask asks the operator one elicitation and prints the answer.

Usage:
  questiond ask --message TEXT --schema FILE|-   [flags]
  questiond ask --message TEXT --choose a,b,c     [--title T] [--key K] [flags]
  questiond ask --message TEXT --choose-many a,b  [--title T] [--key K] [flags]
  questiond ask --message TEXT --text|--confirm   [--title T] [--key K] [flags]

The question is either a requestedSchema (a flat JSON object schema, from a
file or "-" for stdin) or one quick question. It is asked once, even when the
connection drops before the daemon's answer arrives (the request carries an
Idempotency-Key and is sent again). ask waits for the answer, across dropped
connections and daemon restarts, and prints the MCP ElicitResult:
  {"action":"accept","content":{"answer":"b"}}
or, with --content, only the content object (nothing unless accepted).

Exit status:
  0  accept: the operator answered
  3  decline: the operator declined
  4  cancel: the operator dismissed it, or it timed out, was withdrawn or
     ended with the daemon
  1  error, named on stderr: the daemon's own message when it refuses the
     question (a bad schema, a wrong token); also after SIGINT or SIGTERM,
     which withdraw the question ("interrupted; the question was withdrawn")
  2  usage: bad or missing flags, --schema with a quick flag, or an
     unreadable schema file
  5  gone: the question was asked, but its result was forgotten by the
     daemon (--retention, --max-retained) before ask could collect it, so
     the operator's answer is lost; ask did not ask again

When the daemon cannot be reached, ask says so on stderr and keeps trying (it
may be restarting), and says "reconnected" once it reaches it again. To bound
the whole wait, run it under timeout(1): its SIGTERM withdraws the question
(and timeout exits 124); if the daemon was never reached, ask says so
instead: no question was asked.

Flags:
`

// askFlags are the settings of one `questiond ask`.
type askFlags struct {
	message, schema    string
	choose, chooseMany string
	text, confirm      bool
	title, key         string
	server, token      string
	session, directory string
	timeout            time.Duration
	contentOnly        bool
	keySet, titleSet   bool
	quickQuestions     []string // the quick-question flags given
}

// usageError is a problem with the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// ask is `questiond ask`: it returns the process's exit status.
func ask(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, params, err := parseAsk(args, getenv, stdin, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0 // the help was asked for and printed
	}
	if err != nil {
		fmt.Fprintln(stderr, "questiond ask:", err)
		fmt.Fprintln(stderr, askUsageFooter)
		return askUsage
	}
	notice := &unreachableNotice{ctx: ctx, next: http.DefaultTransport, out: stderr, server: f.server}
	c, err := client.New(client.Options{Server: f.server, Token: f.token, HTTPClient: &http.Client{Transport: notice}})
	if err != nil {
		fmt.Fprintln(stderr, "questiond ask:", err)
		fmt.Fprintln(stderr, askUsageFooter)
		return askUsage
	}
	result, err := c.Elicit(ctx, params)
	if err != nil {
		switch {
		case ctx.Err() != nil && !notice.answered.Load():
			// Nothing ever came back, so no question exists to withdraw.
			fmt.Fprintf(stderr, "questiond ask: interrupted; %s could not be reached, so no question was asked\n", f.server)
		case ctx.Err() != nil:
			fmt.Fprintln(stderr, "questiond ask: interrupted; the question was withdrawn")
		case errors.Is(err, client.ErrQuestionGone):
			fmt.Fprintln(stderr, "questiond ask:", describeAskError(err, f.server))
			return askGone
		default:
			fmt.Fprintln(stderr, "questiond ask:", describeAskError(err, f.server))
		}
		return askFailed
	}
	if err := printResult(stdout, result, f.contentOnly); err != nil {
		fmt.Fprintln(stderr, "questiond ask: writing the answer:", err)
		return askFailed
	}
	switch result.Action {
	case client.ActionAccept:
		return askAccepted
	case client.ActionDecline:
		return askDeclined
	case client.ActionCancel:
		return askCancelled
	}
	fmt.Fprintf(stderr, "questiond ask: the daemon answered an unknown action %q\n", result.Action)
	return askFailed
}

// askHelpOrder lists the flags in the order --help explains them: the
// question, then where it goes.
var askHelpOrder = []string{
	"message", "schema", "choose", "choose-many", "text", "confirm", "title", "key",
	"timeout", "session", "directory", "content", "server", "token",
}

// parseAsk reads the command line and the environment into the elicitation
// to send. Every error it returns is a usage error (or flag.ErrHelp).
func parseAsk(args []string, getenv func(string) string, stdin io.Reader, stderr io.Writer) (*askFlags, client.Params, error) {
	f := &askFlags{}
	fs := flag.NewFlagSet("questiond ask", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by ask
	fs.StringVar(&f.message, "message", "", "the `text` shown to the operator (required)")
	fs.StringVar(&f.schema, "schema", "", "requestedSchema JSON `file`, or - for stdin")
	fs.StringVar(&f.choose, "choose", "", "quick question: pick one of comma-separated `values`")
	fs.StringVar(&f.chooseMany, "choose-many", "", "quick question: pick any of comma-separated `values`")
	fs.BoolVar(&f.text, "text", false, "quick question: free text")
	fs.BoolVar(&f.confirm, "confirm", false, "quick question: Yes or No (a boolean)")
	fs.StringVar(&f.title, "title", "", "quick question: its `title` (the operator's question header; default: the first words of --message)")
	fs.StringVar(&f.key, "key", defaultAskKey, "quick question: the content `key` of its answer (default \""+defaultAskKey+"\")")
	fs.StringVar(&f.server, "server", "", "questiond's base `URL` (default \""+client.DefaultServer+"\", env QUESTIOND_SERVER)")
	fs.StringVar(&f.token, "token", "", "agent bearer `token` (env QUESTIOND_TOKEN; prefer the environment, flags show in the process list)")
	fs.DurationVar(&f.timeout, "timeout", 0, "how long the operator has, a Go `duration` (e.g. 90s, 2h); then the result is cancel (default: the daemon's --default-timeout)")
	fs.StringVar(&f.session, "session", "", "OpenCode session `id` (ses_…) the question belongs to (default: the agent's inbox session)")
	fs.StringVar(&f.directory, "directory", "", "project `directory` the question belongs to")
	fs.BoolVar(&f.contentOnly, "content", false, "print only the content object (nothing unless accepted)")
	fs.Usage = func() {} // Parse calls it on every error; only --help prints the help
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printAskHelp(fs, stderr)
			return nil, client.Params{}, err
		}
		return nil, client.Params{}, &usageError{flagError(err)}
	}
	if fs.NArg() > 0 {
		return nil, client.Params{}, usagef("unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "choose", "choose-many", "text", "confirm":
			f.quickQuestions = append(f.quickQuestions, "--"+fl.Name)
		case "key":
			f.keySet = true
		case "title":
			f.titleSet = true
		}
	})
	var err error
	if f.server, f.token, err = agentCredentials(f.server, f.token, getenv); err != nil {
		return nil, client.Params{}, err
	}

	if strings.TrimSpace(f.message) == "" {
		return nil, client.Params{}, usagef("--message is required")
	}
	if f.timeout < 0 {
		return nil, client.Params{}, usagef("--timeout must be positive, got %s", f.timeout)
	}
	schema, err := f.requestedSchema(stdin)
	if err != nil {
		return nil, client.Params{}, err
	}
	return f, client.Params{
		Message:         f.message,
		RequestedSchema: schema,
		SessionID:       f.session,
		Directory:       f.directory,
		Timeout:         f.timeout,
	}, nil
}

func printAskHelp(fs *flag.FlagSet, out io.Writer) {
	fmt.Fprint(out, askUsageHeader)
	writeFlags(out, fs, askHelpOrder, nil)
}

// requestedSchema is --schema's content, or the schema of the one quick
// question.
func (f *askFlags) requestedSchema(stdin io.Reader) (json.RawMessage, error) {
	switch {
	case f.schema != "" && len(f.quickQuestions) > 0:
		return nil, usagef("--schema and %s do not go together: give either a schema or one quick question", f.quickQuestions[0])
	case len(f.quickQuestions) > 1:
		return nil, usagef("%s do not go together: give one quick question, or a --schema for several", strings.Join(f.quickQuestions, " and "))
	case f.schema != "":
		if f.keySet || f.titleSet {
			return nil, usagef("--key and --title belong to a quick question; a --schema names its own properties")
		}
		return readSchema(f.schema, stdin)
	case len(f.quickQuestions) == 0:
		return nil, usagef("no question: give --schema FILE|- or one of --choose, --choose-many, --text, --confirm")
	}
	if strings.TrimSpace(f.key) == "" {
		return nil, usagef("--key must not be empty")
	}
	if f.titleSet && strings.TrimSpace(f.title) == "" {
		return nil, usagef("--title must not be empty (without it the header is the message's first words)")
	}
	labels := []client.Option{client.Title(f.title)}
	if !f.titleSet {
		// Without a title the operator's header would be the key ("answer")
		// and the question "answer (Yes or No)": the message names it better.
		labels = []client.Option{client.Title(headerFrom(f.message)), client.Description(quickQuestionText)}
	}
	b := client.NewSchema()
	switch f.quickQuestions[0] {
	case "--choose":
		values, err := splitChoices("--choose", f.choose)
		if err != nil {
			return nil, err
		}
		b.Choose(f.key, values, optionsAs[client.ChoiceOption](labels)...)
	case "--choose-many":
		values, err := splitChoices("--choose-many", f.chooseMany)
		if err != nil {
			return nil, err
		}
		b.ChooseMany(f.key, values, optionsAs[client.ManyOption](labels)...)
	case "--text":
		b.String(f.key, optionsAs[client.StringOption](labels)...)
	case "--confirm":
		b.Bool(f.key, optionsAs[client.BoolOption](labels)...)
	}
	schema, err := b.Build()
	if err != nil {
		return nil, usagef("%s: %v", f.quickQuestions[0], err)
	}
	return schema, nil
}

// optionsAs gives the options that apply to every kind of property as the
// options of one kind.
func optionsAs[T any](opts []client.Option) []T {
	out := make([]T, len(opts))
	for i, o := range opts {
		out[i] = any(o).(T)
	}
	return out
}

// quickQuestionText is the question text under the message of a quick
// question asked without --title.
const quickQuestionText = "Your answer"

// headerRunes is the most runes of a header taken from the message: a few
// words, well inside the daemon's --header-limit.
const headerRunes = 24

// headerFrom is a quick question's header when --title is not given: the
// first words of the message's first line that fit in headerRunes runes
// (the first word cut if it alone is longer), without trailing punctuation:
// "Deploy build 1234?" is headed "Deploy build 1234".
func headerFrom(message string) string {
	var header string
	for _, line := range strings.Split(message, "\n") {
		words := strings.Fields(line)
		for i, w := range words {
			next := strings.Join(words[:i+1], " ")
			if utf8.RuneCountInString(next) > headerRunes {
				if i == 0 {
					header = string([]rune(w)[:headerRunes-1]) + "…"
				}
				break
			}
			header = next
		}
		if header != "" {
			break
		}
	}
	if trimmed := strings.TrimRight(header, "?!.,;:-–— "); trimmed != "" {
		return trimmed
	}
	return header // all punctuation, like "??"
}

// splitChoices splits a comma-separated list; a value with a comma in it
// needs a --schema.
func splitChoices(flagName, list string) ([]string, error) {
	var values []string
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, usagef("%s %q has an empty value; give comma-separated values like a,b,c", flagName, list)
		}
		values = append(values, v)
	}
	return values, nil
}

// readSchema reads a requestedSchema from a file or, for "-", stdin. It
// checks only that it is a JSON object: the daemon judges the schema itself
// and names what is wrong.
func readSchema(name string, stdin io.Reader) (json.RawMessage, error) {
	var data []byte
	var err error
	source := name
	if name == "-" {
		source = "stdin"
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usagef("--schema: reading %s: %v", source, err)
	}
	var object map[string]json.RawMessage
	if err := json.Unmarshal(data, &object); err != nil || object == nil {
		return nil, usagef("--schema: %s is not a JSON object (a requestedSchema like {\"type\":\"object\",\"properties\":{…}})", source)
	}
	return json.RawMessage(data), nil
}

// describeAskError says what went wrong talking to the daemon: its own
// message when it answered with an error.
func describeAskError(err error, server string) string {
	var answered *client.Error
	if errors.As(err, &answered) {
		return fmt.Sprintf("%s answered %d %s: %s", server, answered.Status, answered.Name, answered.Message)
	}
	return fmt.Sprintf("asking %s: %v", server, err)
}

// printResult writes the ElicitResult, or with contentOnly just its content,
// as one line of JSON.
func printResult(out io.Writer, r *client.Result, contentOnly bool) error {
	var v any
	switch {
	case contentOnly && r.Action != client.ActionAccept:
		return nil
	case contentOnly:
		v = contentObject(r.Content)
	case r.Action == client.ActionAccept:
		v = struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}{r.Action, contentObject(r.Content)}
	default:
		v = struct {
			Action string `json:"action"`
		}{r.Action}
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false) // a shell reads this, not a browser
	return enc.Encode(v)
}

// contentObject makes an accept without content print as {}, not null.
func contentObject(c map[string]any) map[string]any {
	if c == nil {
		return map[string]any{}
	}
	return c
}

// unreachableNotice says on stderr when the daemon cannot be reached, and
// when it answers again. Elicit keeps trying then (the daemon may be
// restarting), so without it a script pointed at the wrong --server would
// wait in silence, and one whose daemon came back would still look stuck.
type unreachableNotice struct {
	ctx    context.Context // once it ends, failures are the interruption's own
	next   http.RoundTripper
	out    io.Writer
	server string
	// answered is set once any HTTP answer came back: from then on a
	// question may exist, and an interruption withdraws it.
	answered atomic.Bool

	mu          sync.Mutex
	unreachable bool // the last attempt failed, and that was said
}

func (n *unreachableNotice) RoundTrip(req *http.Request) (*http.Response, error) {
	// A new connection is the daemon back: a long-poll's answer may be
	// minutes away, and the person watching wants to know now.
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if !info.Reused {
			n.reached()
		}
	}}
	res, err := n.next.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if res != nil {
		n.answered.Store(true)
		n.reached()
	}
	if err != nil && n.ctx.Err() == nil && req.Context().Err() == nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.unreachable {
			n.unreachable = true
			fmt.Fprintf(n.out, "questiond ask: %s is not answering (%v); still trying, as it may be restarting (Ctrl-C gives up)\n", n.server, err)
		}
	}
	return res, err
}

// reached says that the daemon can be reached again, if it could not.
func (n *unreachableNotice) reached() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.unreachable {
		n.unreachable = false
		fmt.Fprintf(n.out, "questiond ask: reconnected to %s\n", n.server)
	}
}

// agentCredentials completes the --server and --token of a command that
// talks to questiond as an agent (ask, bridge) from the environment, as
// the client package does, and checks the server's URL.
func agentCredentials(server, token string, getenv func(string) string) (string, string, error) {
	serverFrom := "--server"
	if server == "" {
		server, serverFrom = getenv(client.EnvServer), client.EnvServer
	}
	if server == "" {
		server = client.DefaultServer
	}
	if _, err := client.ParseServer(server); err != nil {
		return "", "", usagef("%s %v", serverFrom, err)
	}
	if token == "" {
		token = getenv(client.EnvToken)
	}
	return server, token, nil
}
