package pgstore_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/pgstore"
	"github.com/questiond/questiond/internal/pgtest"
)

// Several replicas starting at once on an empty database migrate it once:
// all of them open, and the schema is at the current version with its one
// log head.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	url := database(t)
	const replicas = 6
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for range replicas {
		wg.Go(func() {
			s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
			if err == nil {
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a concurrent open failed: %v", err)
		}
	}
	s := open(t, url)
	var version, heads int
	if err := s.Pool().QueryRow(context.Background(), "SELECT version, (SELECT count(*) FROM pending_stripes) FROM questiond_schema").Scan(&version, &heads); err != nil {
		t.Fatal(err)
	}
	if version != pgstore.SchemaVersion || heads != 32 {
		t.Fatalf("version %d with %d counter stripes; want %d with 32", version, heads, pgstore.SchemaVersion)
	}
}

// A database a newer questiond wrote is refused with ErrNewerSchema and
// left exactly as it was.
func TestNewerSchemaIsRefusedAndLeftAlone(t *testing.T) {
	url := database(t)
	s := open(t, url)
	ctx := context.Background()
	newer := pgstore.SchemaVersion + 1
	if _, err := s.Pool().Exec(ctx, "UPDATE questiond_schema SET version = $1", newer); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, "DROP TABLE sessions"); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.Open(ctx, url, pgstore.Options{})
	if !errors.Is(err, pgstore.ErrNewerSchema) {
		t.Fatalf("open of a newer database: %v; want ErrNewerSchema", err)
	}
	var version int
	var sessions *string
	if err := s.Pool().QueryRow(ctx, "SELECT version, to_regclass('sessions')::text FROM questiond_schema").Scan(&version, &sessions); err != nil {
		t.Fatal(err)
	}
	if version != newer || sessions != nil {
		t.Fatalf("after the refusal: version %d, sessions table %v; want %d and none (untouched)", version, sessions, newer)
	}
}

// A URL that does not parse is refused without being quoted (it may hold a
// password); an unreachable server is ErrUnavailable.
func TestOpenErrorsKeepTheURLSecret(t *testing.T) {
	_, err := pgstore.Open(context.Background(), "postgres://u:s3cret@[::1", pgstore.Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("bad URL: %v; want an error without the password", err)
	}
	_, err = pgstore.Open(context.Background(), "postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=2", pgstore.Options{})
	if !errors.Is(err, pgstore.ErrUnavailable) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("unreachable server: %v; want ErrUnavailable without the password", err)
	}
}

// The pool keeps pgxpool's default for requests, plus the tailer's
// connection; pool_max_conns in the URL is taken as given.
func TestPoolSize(t *testing.T) {
	url := database(t)
	s := open(t, url)
	if got, want := s.Pool().Config().MaxConns, int32(max(4, runtime.NumCPU())+1); got != want {
		t.Fatalf("default pool: %d connections; want %d", got, want)
	}
	s = open(t, url+"&pool_max_conns=7")
	if got := s.Pool().Config().MaxConns; got != 7 {
		t.Fatalf("pool_max_conns=7: %d connections", got)
	}
}

// A database where synchronous_commit is off would let an acknowledged
// change vanish in a crash of PostgreSQL: questiond's connections commit
// to the server's disk there anyway (local), and say so once; elsewhere
// the setting is left alone.
func TestCommitsWaitForTheDiskWhereSynchronousCommitIsOff(t *testing.T) {
	ctx := context.Background()
	for _, off := range []bool{false, true} {
		url := database(t)
		if off {
			name := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
			if err := pgtest.Shared(t).Exec(ctx, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
				t.Fatal(err)
			}
		}
		core, logs := observer.New(zap.WarnLevel)
		s, err := pgstore.Open(ctx, url, pgstore.Options{Logger: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		// Every connection of the pool, not only the first.
		var conns []*pgxpool.Conn
		for range 3 {
			c, err := s.Pool().Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		want, warnings := "on", 0
		if off {
			want, warnings = "local", 1
		}
		for _, c := range conns {
			var setting string
			if err := c.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting); err != nil {
				t.Fatal(err)
			}
			if setting != want {
				t.Errorf("database with synchronous_commit off=%v: a connection commits with %q; want %q", off, setting, want)
			}
			c.Release()
		}
		if n := logs.FilterMessageSnippet("synchronous_commit is off").Len(); n != warnings {
			t.Errorf("database with synchronous_commit off=%v: warned %d times; want %d", off, n, warnings)
		}
		s.Close()
	}
}
