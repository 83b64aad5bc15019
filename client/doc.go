// Package client lets a Go agent ask a human structured questions through
// questiond and get typed answers back.
//
// Elicit sends an MCP elicitation (a message and a requestedSchema) and waits
// for the operator's answer with long-polls. It keeps waiting across dropped
// connections and daemon restarts — retrying with backoff and resuming by the
// question's id — and never asks the same question twice: every create
// carries an Idempotency-Key, so one whose answer was lost is sent again and
// questiond answers with the question it already asked. Cancelling its
// context withdraws the question. Errors answered by questiond come back as
// *Error values that match the Err sentinels with errors.Is.
//
// New reads $QUESTIOND_SERVER and $QUESTIOND_TOKEN when Options leave Server
// or Token empty, as `questiond ask` does. A daemon that does not answer is
// made visible by Options.OnRetry (every retried failure) and bounded by
// Options.GiveUpUnreached (then ErrUnreachable, and no question exists).
//
// SchemaBuilder builds a requestedSchema that can only be inside the MCP
// elicitation subset, and Result's accessors read the answers back.
//
// # Example
//
//	package main
//
//	import (
//		"context"
//		"log"
//		"time"
//
//		"github.com/questiond/questiond/client"
//	)
//
//	func main() {
//		// Server and Token default to $QUESTIOND_SERVER and $QUESTIOND_TOKEN, else the local daemon.
//		c, err := client.New(client.Options{
//			GiveUpUnreached: time.Minute, // ErrUnreachable if questiond never answers
//			OnRetry: func(err error, wait time.Duration) {
//				log.Printf("questiond: %v; trying again in %s", err, wait.Round(time.Millisecond))
//			},
//		})
//		if err != nil {
//			log.Fatal(err)
//		}
//		schema, err := client.NewSchema().
//			Choose("env", []string{"staging", "prod"}, client.Title("Environment")).
//			Integer("replicas", client.Min(1), client.Max(10), client.DefaultNumber(2)).
//			Build()
//		if err != nil {
//			log.Fatal(err)
//		}
//		res, err := c.Elicit(context.Background(), client.Params{Message: "Deploy where?", RequestedSchema: schema})
//		if err != nil || !res.Accepted() {
//			log.Fatal("no answer: ", err)
//		}
//		env, _ := res.String("env")
//		replicas, _ := res.Int("replicas")
//		log.Printf("deploying %d replicas to %s", replicas, env)
//	}
package client
