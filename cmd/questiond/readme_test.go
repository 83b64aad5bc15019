package main

import (
	"errors"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// helpDefaults reads every flag and its default from --help.
func helpDefaults(t *testing.T) map[string]string {
	t.Helper()
	var out strings.Builder
	if _, err := parseConfig([]string{"--help"}, func(string) string { return "" }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	flagLine := regexp.MustCompile(`^  --([a-z0-9-]+)`)
	defaultOf := regexp.MustCompile(`\(default "([^"]*)"`)
	flags := map[string]string{}
	var current string
	for _, line := range strings.Split(out.String(), "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			current = m[1]
			flags[current] = ""
		}
		if m := defaultOf.FindStringSubmatch(line); m != nil && current != "" {
			flags[current] = m[1]
		}
	}
	delete(flags, "help")
	delete(flags, "version")
	if len(flags) < 20 {
		t.Fatalf("read only %d flags from --help:\n%s", len(flags), out.String())
	}
	return flags
}

// readmeDefaults reads docs/configuration.md's table of flags: each flag and the text
// of its default cell.
func readmeDefaults(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| (`--[a-z0-9-]+`(?:, `--[a-z0-9-]+`)*) \\|([^|]*)\\|")
	name := regexp.MustCompile("`--([a-z0-9-]+)`")
	rows := map[string]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			rows[n[1]] = strings.TrimSpace(m[2])
		}
	}
	return rows
}

// sameDefault reports whether the table's cell states the flag's default:
// one code span equal to it (durations compared as durations), or an empty
// cell (or "off") for an empty or false default. A cell in prose, such as the
// data directory's, is taken as it is.
func sameDefault(cell, value string) bool {
	switch {
	case cell == "" || cell == "off":
		return value == "" || value == "false"
	case !strings.HasPrefix(cell, "`") || strings.Count(cell, "`") != 2 || !strings.HasSuffix(cell, "`"):
		return true
	}
	text := strings.Trim(cell, "`")
	if a, err := time.ParseDuration(text); err == nil {
		b, err := time.ParseDuration(value)
		return err == nil && a == b
	}
	return text == value
}

// docs/configuration.md's flag table is what --help says: the same flags,
// the same defaults. A flag added in one place and not the other, or a
// default changed in code only, fails here.
func TestReadmeFlagTableMatchesHelp(t *testing.T) {
	t.Parallel()
	help, readme := helpDefaults(t), readmeDefaults(t)
	for flagName, value := range help {
		cell, ok := readme[flagName]
		if !ok {
			t.Errorf("--%s (default %q) is not in docs/configuration.md's flag table", flagName, value)
			continue
		}
		if !sameDefault(cell, value) {
			t.Errorf("--%s: docs/configuration.md says %s, --help says %q", flagName, cell, value)
		}
	}
	for flagName := range readme {
		if _, ok := help[flagName]; !ok {
			t.Errorf("docs/configuration.md's flag table lists --%s, which --help does not know", flagName)
		}
	}
}
