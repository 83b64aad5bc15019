package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/httpapi"
)

// deployForm is a builder-made schema with one property of every kind the
// round trips read back.
func deployForm(t *testing.T) client.Params {
	t.Helper()
	schema, err := client.NewSchema().
		String("name", client.Title("Name"), client.MinLength(1), client.MaxLength(40)).
		Integer("replicas", client.Title("Replicas"), client.Min(1), client.Max(10), client.DefaultNumber(2)).
		Number("ratio", client.Title("Canary ratio"), client.Min(0), client.Max(1)).
		Bool("dryRun", client.Title("Dry run")).
		ChooseTitled("region", []client.Choice{{Value: "eu-west-1", Title: "Ireland"}, {Value: "us-east-1", Title: "Virginia"}}, client.Title("Region")).
		ChooseMany("tags", []string{"web", "db", "cache"}, client.Title("Tags"), client.Optional()).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	return client.Params{Message: "Set up the deployment", RequestedSchema: schema}
}

func TestElicitAcceptReadsTypedContent(t *testing.T) {
	d := startDaemon(t, daemonConfig{})
	ops := watch(t, d.URL)
	c := newClient(t, d.URL, client.Options{})
	out := elicitAsync(t, t.Context(), c, deployForm(t))

	q := ops.asked(t)
	if len(q.Questions) != 6 {
		t.Fatalf("the operator sees %d questions, want 6", len(q.Questions))
	}
	reply(t, d.URL, q.ID, []string{"api"}, []string{"3"}, []string{"0.25"}, []string{"Yes"}, []string{"Virginia"}, []string{"db", "web"})
	o := await(t, out)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !o.res.Accepted() {
		t.Fatalf("action %q, want accept", o.res.Action)
	}
	name, err := o.res.String("name")
	check(t, err, name == "api", "name %q", name)
	replicas, err := o.res.Int("replicas")
	check(t, err, replicas == 3, "replicas %d", replicas)
	ratio, err := o.res.Float("ratio")
	check(t, err, ratio == 0.25, "ratio %v", ratio)
	dry, err := o.res.Bool("dryRun")
	check(t, err, dry, "dryRun %v", dry)
	region, err := o.res.String("region")
	check(t, err, region == "us-east-1", "region %q", region)
	tags, err := o.res.Strings("tags")
	check(t, err, slices.Equal(tags, []string{"web", "db"}), "tags %q", tags)
	if got := d.created.Load(); got != 1 {
		t.Fatalf("%d questions created, want 1", got)
	}
}

func check(t *testing.T, err error, ok bool, format string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("unexpected "+format, args...)
	}
}

func TestElicitDeclineAndCancel(t *testing.T) {
	for _, tc := range []struct{ rejectAs, want string }{
		{"decline", client.ActionDecline},
		{"", client.ActionCancel},
	} {
		t.Run(tc.want, func(t *testing.T) {
			d := startDaemon(t, daemonConfig{})
			ops := watch(t, d.URL)
			c := newClient(t, d.URL, client.Options{})
			out := elicitAsync(t, t.Context(), c, deployForm(t))
			reject(t, d.URL, ops.asked(t).ID, tc.rejectAs)
			o := await(t, out)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.res.Action != tc.want || o.res.Accepted() || o.res.Content != nil {
				t.Fatalf("result %+v, want %s without content", o.res, tc.want)
			}
			if _, err := o.res.String("name"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("reading a %s result: %v, want an error naming the action", tc.want, err)
			}
		})
	}
}

// Cancelling ctx while Elicit long-polls withdraws the question.
func TestElicitCancelWithdrawsTheQuestion(t *testing.T) {
	polls := make(chan struct{}, 100)
	d := startDaemon(t, daemonConfig{wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Query().Has("wait") {
				polls <- struct{}{}
			}
			next.ServeHTTP(w, r)
		})
	}})
	ops := watch(t, d.URL)
	c := newClient(t, d.URL, client.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	out := elicitAsync(t, ctx, c, deployForm(t))
	q := ops.asked(t)
	<-polls // Elicit is waiting
	cancel()
	expectWithdrawn(t, d, c, ops, q.ID, await(t, out))
}

// Cancelling ctx while the POST is on its way still withdraws the question
// it creates: the POST may finish, and the id it returns is withdrawn.
func TestElicitCancelDuringCreateWithdrawsTheQuestion(t *testing.T) {
	created, answer := make(chan struct{}), make(chan struct{})
	d := startDaemon(t, daemonConfig{wrap: intercept(
		func(r *http.Request) bool { return r.Method == http.MethodPost },
		func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			close(created)
			<-answer // hold the 201 until the agent has given up
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})})
	ops := watch(t, d.URL)
	c := newClient(t, d.URL, client.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	out := elicitAsync(t, ctx, c, deployForm(t))
	q := ops.asked(t)
	<-created
	cancel()
	close(answer)
	expectWithdrawn(t, d, c, ops, q.ID, await(t, out))
}

func expectWithdrawn(t *testing.T, d *daemon, c *client.Client, ops *events, id string, o elicitOutcome) {
	t.Helper()
	if !errors.Is(o.err, context.Canceled) || o.res != nil {
		t.Fatalf("Elicit returned %+v, %v; want context.Canceled", o.res, o.err)
	}
	ops.next(t, "question.rejected")
	if list := pendingQuestions(t, d.URL); len(list) != 0 {
		t.Fatalf("GET /question still lists %d questions", len(list))
	}
	got, err := c.Get(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ending != "withdrawn" || got.Result.Action != client.ActionCancel {
		t.Fatalf("the question ended %q with %+v, want withdrawn/cancel", got.Ending, got.Result)
	}
}

func TestElicitErrorsAreTyped(t *testing.T) {
	const token = "agent-token-0123456789"
	d := startDaemon(t, daemonConfig{api: httpapi.Options{Auth: httpapi.Auth{
		AgentTokens: map[string]string{"builder": token, "reviewer": "reviewer-token-0123456789"},
	}}})
	c := newClient(t, d.URL, client.Options{Token: token})

	_, err := c.Elicit(t.Context(), client.Params{Message: "Where?",
		RequestedSchema: []byte(`{"type":"object","properties":{"address":{"type":"object","properties":{}}}}`)})
	var qe *client.Error
	if !errors.Is(err, client.ErrBadRequest) || !errors.As(err, &qe) {
		t.Fatalf("a nested schema gave %v, want ErrBadRequest", err)
	}
	if qe.Status != http.StatusBadRequest || qe.Name != "BadRequest" || qe.Kind != "Payload" || !strings.Contains(qe.Message, "nested objects") {
		t.Fatalf("error %#v does not carry the server's message", qe)
	}
	if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("a 400 matches another sentinel: %v", err)
	}

	wrong := newClient(t, d.URL, client.Options{Token: "not-the-token-0123456789"})
	if _, err := wrong.Elicit(t.Context(), deployForm(t)); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("a wrong token gave %v, want ErrUnauthorized", err)
	}
	none := newClient(t, d.URL, client.Options{})
	if _, err := none.Create(t.Context(), deployForm(t)); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("no token gave %v, want ErrUnauthorized", err)
	}

	e, err := c.Create(t.Context(), deployForm(t))
	if err != nil {
		t.Fatal(err)
	}
	other := newClient(t, d.URL, client.Options{Token: "reviewer-token-0123456789"})
	if _, err := other.Wait(t.Context(), e.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("another agent's question gave %v, want ErrNotFound", err)
	}
	if _, err := other.Withdraw(t.Context(), e.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("withdrawing another agent's question gave %v, want ErrNotFound", err)
	}
	if got, err := c.Withdraw(t.Context(), e.ID); err != nil || got.Result.Action != client.ActionCancel {
		t.Fatalf("withdrawing: %+v, %v", got, err)
	}
	if _, err := c.Withdraw(t.Context(), e.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("withdrawing twice gave %v, want ErrNotFound", err)
	}
	if d.created.Load() != 1 {
		t.Fatalf("%d questions created, want 1", d.created.Load())
	}
}

func TestCreateGetAndParams(t *testing.T) {
	d := startDaemon(t, daemonConfig{})
	c := newClient(t, d.URL, client.Options{})
	p := deployForm(t)
	p.SessionID = "ses_client_test"
	p.Directory = "/work/project/"
	p.Timeout = 90 * time.Second
	p.Tool = &client.Tool{MessageID: "msg_1", CallID: "call_1"}
	p.Meta = map[string]any{"progressToken": "p1"}
	e, err := c.Create(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.ID, "que") || e.Status != client.StatusPending || e.SessionID != p.SessionID || e.Directory != "/work/project" || e.Result != nil {
		t.Fatalf("created %+v", e)
	}
	if e.Tool == nil || *e.Tool != *p.Tool {
		t.Fatalf("created with tool %+v, want %+v", e.Tool, p.Tool)
	}
	if e.Deadline == nil || e.Deadline.Sub(e.CreatedAt) != 90*time.Second {
		t.Fatalf("deadline %v for a 90s timeout created at %v", e.Deadline, e.CreatedAt)
	}
	got, err := c.Get(t.Context(), e.ID, 0)
	if err != nil || got.ID != e.ID || got.Status != client.StatusPending {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	start := time.Now()
	got, err = c.Get(t.Context(), e.ID, 50*time.Millisecond)
	if err != nil || got.Status != client.StatusPending || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("a long-poll of 50ms: %+v, %v after %v", got, err, time.Since(start))
	}
	if _, err := c.Get(t.Context(), "que_unknown", 0); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("an unknown id gave %v, want ErrNotFound", err)
	}
}
