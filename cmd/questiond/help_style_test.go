package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"
)

// commandRun runs one questiond command (the daemon's flags, ask, health,
// migrate) with args and returns what it wrote to stdout and stderr.
type commandRun func(args ...string) (out string)

var questiondCommands = map[string]commandRun{
	"questiond": func(args ...string) string {
		var stderr bytes.Buffer
		_, err := parseConfig(args, envOf(nil), &stderr)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			stderr.WriteString(err.Error())
		}
		return stderr.String()
	},
	"questiond ask": func(args ...string) string {
		var stdout, stderr bytes.Buffer
		ask(context.Background(), args, envOf(nil), strings.NewReader(""), &stdout, &stderr)
		return stdout.String() + stderr.String()
	},
	"questiond health": func(args ...string) string {
		var stdout, stderr bytes.Buffer
		health(context.Background(), args, envOf(nil), &stdout, &stderr)
		return stdout.String() + stderr.String()
	},
	"questiond migrate": func(args ...string) string {
		var stdout, stderr bytes.Buffer
		migrateCommand(context.Background(), args, envOf(nil), &stdout, &stderr)
		return stdout.String() + stderr.String()
	},
}

// Every command's --help names its flags the one way the README and the
// error messages do, --name, and an off switch has no `(default "false")`;
// a flag the command does not know is named the same way. Before, migrate
// printed the flag package's `-data-dir`, the daemon `(default "false")`
// for --console-follow, --insecure and --notify-include-text, and ask
// answered an unknown flag with "flag provided but not defined: -nope".
func TestEveryCommandWritesFlagsOneWay(t *testing.T) {
	t.Parallel()
	flagLine := regexp.MustCompile(`(?m)^\s*-{1,2}[a-z][a-z0-9-]*`)
	for name, run := range questiondCommands {
		help := run("--help")
		lines := flagLine.FindAllString(help, -1)
		if len(lines) == 0 {
			t.Errorf("%s --help lists no flags:\n%s", name, help)
		}
		for _, line := range lines {
			if !strings.HasPrefix(line, "  --") {
				t.Errorf("%s --help: flag line %q is not written \"  --name\"", name, line)
			}
		}
		if m := regexp.MustCompile(`[(,] ?default [^"]+`).FindString(help); m != "" {
			t.Errorf("%s --help states a default unquoted, unlike the daemon's (default \"…\"): %q", name, m)
		}
		if strings.Contains(help, `(default "false"`) {
			t.Errorf("%s --help states an off switch's default false:\n%s", name, help)
		}
		if regexp.MustCompile(`(?m) +$`).MatchString(help) {
			t.Errorf("%s --help has lines ending in spaces:\n%q", name, help)
		}
		refusal := run("--no-such-flag")
		if !strings.Contains(refusal, "unknown flag --no-such-flag") || strings.Contains(refusal, " -no-such-flag") {
			t.Errorf("%s --no-such-flag says %q, want \"unknown flag --no-such-flag\"", name, refusal)
		}
	}
	for name, flagName := range map[string]string{"questiond": "addr", "questiond ask": "message", "questiond health": "timeout", "questiond migrate": "data-dir"} {
		if refusal := questiondCommands[name]("--" + flagName); !strings.Contains(refusal, "flag needs an argument: --"+flagName) {
			t.Errorf("%s --%s without its value says %q", name, flagName, refusal)
		}
	}
	if refusal := questiondCommands["questiond ask"]("--message", "m", "--timeout", "soon"); !strings.Contains(refusal, `"soon" for flag --timeout`) {
		t.Errorf("questiond ask --timeout soon says %q", refusal)
	}
	// Off switches stay off switches: no value after the name.
	daemonHelp := questiondCommands["questiond"]("--help")
	for _, sw := range []string{"--console-follow", "--insecure", "--notify-include-text"} {
		if !strings.Contains(daemonHelp, "\n  "+sw+"\n") {
			t.Errorf("questiond --help: %s is not on a line of its own:\n%s", sw, daemonHelp)
		}
	}
	if migrateHelp := questiondCommands["questiond migrate"]("--help"); !strings.Contains(migrateHelp, "\n  --data-dir dir\n") {
		t.Errorf("questiond migrate --help does not show --data-dir dir:\n%s", migrateHelp)
	}
}
