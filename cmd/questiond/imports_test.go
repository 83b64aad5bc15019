package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testkit"
)

// The command reaches the daemon's parts (httpapi, sse, elicit, notify,
// session, connguard, …), their option types and their defaults, through
// package daemon alone, so that moving a setting between parts changes
// daemon, not the command line. Besides daemon it may import the two stores
// `migrate` copies between; a subcommand with a package of its own adds
// that package here.
var allowedInternal = []string{
	"github.com/questiond/questiond/internal/daemon",
	"github.com/questiond/questiond/internal/pending", // migrate's source
	"github.com/questiond/questiond/internal/pgstore", // migrate's destination
	"github.com/questiond/questiond/internal/bridge",  // questiond bridge
}

func TestImportsOnlyDaemonAndStores(t *testing.T) {
	t.Parallel()
	// .Imports are the package's own imports: its tests' are .TestImports.
	imports := testkit.GoList(t, `{{join .Imports " "}}`, ".")
	if !slices.Contains(imports, allowedInternal[0]) {
		t.Fatalf("go list names no %s among cmd/questiond's imports, so it read something else: %q", allowedInternal[0], imports)
	}
	for _, path := range imports {
		if strings.HasPrefix(path, "github.com/questiond/questiond/internal/") && !slices.Contains(allowedInternal, path) {
			t.Errorf("cmd/questiond imports %s: reach it through internal/daemon (a type alias or a re-exported Default* constant there)", path)
		}
	}
}
