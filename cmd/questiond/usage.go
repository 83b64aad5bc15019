package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Every questiond command (the daemon, ask, health, migrate) writes its
// flags in one style: two dashes, as the README and the error messages
// name them, where the flag package's own PrintDefaults writes one dash and
// an off switch's `(default "false")`.

// writeFlags writes the flags of fs named in order (every flag, sorted, when
// order is nil): "  --name value" and, on the next line, what the flag does
// followed by notes(f) in parentheses (notes may be nil).
func writeFlags(out io.Writer, fs *flag.FlagSet, order []string, notes func(*flag.Flag) []string) {
	write := func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" && !isBoolFlag(f) {
			line += " " + arg
		}
		if notes != nil {
			if n := notes(f); len(n) > 0 {
				usage += " (" + strings.Join(n, ", ") + ")"
			}
		}
		fmt.Fprintf(out, "%s\n    \t%s\n", line, usage)
	}
	if order == nil {
		fs.VisitAll(write)
		return
	}
	for _, name := range order {
		write(fs.Lookup(name))
	}
}

// defaultNote is `default "…"` for a flag with a default worth stating: not
// an empty one, nor an off switch's false.
func defaultNote(f *flag.Flag) []string {
	if f.DefValue == "" || (isBoolFlag(f) && f.DefValue == "false") {
		return nil
	}
	return []string{fmt.Sprintf("default %q", f.DefValue)}
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagNamed finds the flag an error of the flag package's Parse names, with
// the package's one dash.
var flagNamed = regexp.MustCompile(`^(flag needs an argument: |invalid value ".*" for flag |invalid boolean value ".*" for |invalid boolean flag )-([^-])`)

// flagError rewords an error of the flag package's Parse with the flag
// named as questiond names it, --name: "unknown flag --x", "flag needs an
// argument: --x", "invalid value "v" for flag --x: …".
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + name
	}
	return flagNamed.ReplaceAllString(msg, "${1}--${2}")
}
