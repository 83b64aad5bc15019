package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// An agent asks which environment to deploy to and how many replicas, and
// reads the operator's typed answer.
func ExampleClient_Elicit() {
	server := exampleDaemon([][]string{{"prod"}, {"3"}}) // an operator who answers "prod", "3"
	defer server.Close()

	c, err := client.New(client.Options{Server: server.URL})
	if err != nil {
		log.Fatal(err)
	}
	schema, err := client.NewSchema().
		Choose("env", []string{"staging", "prod"}, client.Title("Environment")).
		Integer("replicas", client.Min(1), client.Max(10), client.DefaultNumber(2)).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Elicit(context.Background(), client.Params{Message: "Deploy where?", RequestedSchema: schema})
	if err != nil {
		log.Fatal(err)
	}
	env, _ := res.String("env")
	replicas, _ := res.Int("replicas")
	fmt.Println(res.Action, env, replicas)
	// Output: accept prod 3
}

// Errors answered by questiond match the package's sentinels and carry the
// server's message.
func ExampleError() {
	server := exampleDaemon(nil)
	defer server.Close()
	c, err := client.New(client.Options{Server: server.URL})
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Elicit(context.Background(), client.Params{
		Message:         "Where?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"address":{"type":"object"}}}`),
	})
	var qe *client.Error
	if errors.Is(err, client.ErrBadRequest) && errors.As(err, &qe) {
		fmt.Println(qe.Status, qe.Message)
	}
	// Output: 400 requestedSchema.properties.address: nested objects are not allowed in elicitation schemas
}

func ExampleSchemaBuilder() {
	schema, err := client.NewSchema().
		String("contact", client.Title("Contact"), client.Email()).
		ChooseTitled("region", []client.Choice{{Value: "eu-west-1", Title: "Ireland"}, {Value: "us-east-1", Title: "Virginia"}}).
		ChooseMany("tags", []string{"web", "db"}, client.MaxItems(1), client.Optional()).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(schema))
	// Output: {"type":"object","properties":{"contact":{"type":"string","title":"Contact","format":"email"},"region":{"type":"string","oneOf":[{"const":"eu-west-1","title":"Ireland"},{"const":"us-east-1","title":"Virginia"}]},"tags":{"type":"array","items":{"type":"string","enum":["web","db"]},"maxItems":1}},"required":["contact","region"]}
}

// Misuse is reported by Build, naming each property.
func ExampleSchemaBuilder_Build() {
	_, err := client.NewSchema().
		Choose("env", []string{"staging", "prod"}, client.DefaultChoice("dev")).
		Integer("replicas", client.Min(10), client.Max(1)).
		Build()
	fmt.Println(err)
	// Output:
	// schema: property "env": default "dev" is not one of the choices
	// schema: property "replicas": minimum 10 is greater than maximum 1
}

func ExampleResult_Strings() {
	res := &client.Result{Action: "accept", Content: map[string]any{"tags": []any{"web", "db"}, "replicas": 2.5}}
	tags, _ := res.Strings("tags")
	_, err := res.Int("replicas")
	fmt.Println(tags, err)
	// Output: [web db] questiond: "replicas": want an integer, found 2.5
}

// exampleServer is an in-process questiond with an operator who answers
// every question with the same answers (none: the operator never answers).
type exampleServer struct {
	URL   string
	close func()
}

func (s *exampleServer) Close() { s.close() }

func exampleDaemon(answers [][]string) *exampleServer {
	bus, err := sse.New(sse.Options{Heartbeat: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	events := httpapi.NewEvents(bus, nil)
	announce := ask.NewAnnouncements(nil, events)
	store := pending.New(pending.Options{OnEnd: announce.Ended})
	questions, err := ask.New(store, nil, announce, ask.Options{})
	if err != nil {
		log.Fatal(err)
	}
	api, err := httpapi.New(questions, events, httpapi.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(api)
	ctx, cancel := context.WithCancel(context.Background())
	operator := make(chan struct{})
	go func() {
		defer close(operator)
		if answers != nil {
			answerAll(ctx, ts.URL, answers)
		}
	}()
	return &exampleServer{URL: ts.URL, close: func() {
		cancel()
		<-operator
		ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		api.Questions().Drain()
		_, _ = store.SettleAll(ctx, pending.Outcome{Ending: pending.EndShutdown, Result: pending.Result{Action: pending.ActionCancel}})
		_ = bus.Close(ctx)
		ts.Close()
		_ = store.Close(ctx)
	}}
}

// answerAll watches the operators' event stream and replies to every
// question it announces, until ctx ends.
func answerAll(ctx context.Context, base string, answers [][]string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/event", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type       string `json:"type"`
			Properties struct {
				ID string `json:"id"`
			} `json:"properties"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil || ev.Type != "question.asked" {
			continue
		}
		body, _ := json.Marshal(map[string]any{"answers": answers})
		post, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/question/"+ev.Properties.ID+"/reply", strings.NewReader(string(body)))
		post.Header.Set("Content-Type", "application/json")
		if r, err := http.DefaultClient.Do(post); err == nil {
			_ = r.Body.Close()
		}
	}
}
