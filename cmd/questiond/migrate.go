package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
)

const migrateUsage = `Usage: questiond migrate [--data-dir dir]

Copies a single-machine questiond's bbolt database (<data-dir>/questiond.db:
pending questions, results, session records) into the PostgreSQL database
QUESTIOND_DATABASE_URL names, for --store postgres. Stop that questiond
first (its file is locked while it runs), and run this before starting the
replicas: they read ended results when they start. Questions and sessions
the database already holds are left as they are, so it can be run again.

Flags:
`

// migrateCommand is `questiond migrate`; it returns the exit status.
func migrateCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("questiond migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, below
	fs.Usage = func() {}
	c := &config{}
	fs.StringVar(&c.dataDir, "data-dir", getenv("QUESTIOND_DATA_DIR"), "`dir` of the bbolt database; by default $XDG_STATE_HOME/questiond, else ~/.local/state/questiond (env QUESTIOND_DATA_DIR)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, migrateUsage)
			writeFlags(stderr, fs, nil, nil)
			return 0
		}
		fmt.Fprintf(stderr, "questiond migrate: %s (see questiond migrate --help)\n", flagError(err))
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "questiond migrate: unexpected argument %q (see questiond migrate --help)\n", fs.Arg(0))
		return 2
	}
	n, err := migrateToPostgres(ctx, c, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "questiond migrate:", err)
		return 1
	}
	fmt.Fprintf(stdout, "copied %d questions and %d session records; %d questions and %d session records were already there\n",
		n.Questions, n.Sessions, n.QuestionsSkipped, n.SessionsSkipped)
	return 0
}

func migrateToPostgres(ctx context.Context, c *config, getenv func(string) string) (pgstore.Imported, error) {
	url := getenv("QUESTIOND_DATABASE_URL")
	if url == "" {
		return pgstore.Imported{}, errors.New("QUESTIOND_DATABASE_URL is not set: it names the PostgreSQL database to copy into (environment only: it may hold a password)")
	}
	path, err := c.databasePath(getenv)
	if err != nil {
		return pgstore.Imported{}, err
	}
	bolt, err := pending.OpenBolt(path, pending.BoltOptions{})
	if err != nil {
		return pgstore.Imported{}, fmt.Errorf("opening %s: %w", path, err)
	}
	defer bolt.Close()
	questions, err := bolt.Load(ctx)
	if err != nil {
		return pgstore.Imported{}, err
	}
	table, err := bolt.Table("sessions")
	if err != nil {
		return pgstore.Imported{}, err
	}
	sessions, err := table.Load(ctx)
	if err != nil {
		return pgstore.Imported{}, fmt.Errorf("reading the session records of %s: %w", path, err)
	}
	db, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		return pgstore.Imported{}, fmt.Errorf("opening the PostgreSQL database: %w", err)
	}
	defer db.Close()
	return db.Import(ctx, questions, sessions)
}
