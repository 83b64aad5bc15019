package elicit

import (
	"fmt"
	"regexp"
	"unicode/utf8"
)

// The checks below are shared by schema defaults and operator answers, so a
// default can never be something an operator could not have typed. Each
// returns "" when the value fits, else the problem in words.

// textProblem checks a free-text string against length, format and pattern.
// Lengths count runes, as JSON Schema does.
func (p *Property) textProblem(s string) string {
	n := utf8.RuneCountInString(s)
	if p.MinLength != nil && n < *p.MinLength {
		return fmt.Sprintf("%s is shorter than %s", quote(s), plural(*p.MinLength, "character"))
	}
	if p.MaxLength != nil && n > *p.MaxLength {
		return fmt.Sprintf("%s is longer than %s", quote(s), plural(*p.MaxLength, "character"))
	}
	if p.Format != "" {
		if problem := formatProblem(p.Format, s); problem != "" {
			return problem
		}
	}
	if p.Pattern != "" {
		re, err := p.compiledPattern()
		if err != nil {
			return fmt.Sprintf("the schema's pattern %s is invalid", quote(p.Pattern))
		}
		if !re.MatchString(s) {
			return fmt.Sprintf("%s does not match the pattern %s", quote(s), p.Pattern)
		}
	}
	return ""
}

func (p *Property) compiledPattern() (*regexp.Regexp, error) {
	if p.pattern != nil {
		return p.pattern, nil
	}
	return regexp.Compile(p.Pattern)
}

// rangeProblem checks a number (float64 or int64) against minimum and
// maximum.
func (p *Property) rangeProblem(value any) string {
	var f float64
	switch v := value.(type) {
	case int64:
		f = float64(v)
	case float64:
		f = v
	}
	if p.Minimum != nil && f < *p.Minimum {
		return fmt.Sprintf("%s is less than the minimum %s", formatNumber(f), formatNumber(*p.Minimum))
	}
	if p.Maximum != nil && f > *p.Maximum {
		return fmt.Sprintf("%s is greater than the maximum %s", formatNumber(f), formatNumber(*p.Maximum))
	}
	return ""
}

// itemsProblem checks how many choices a multi-select answer picked.
func (p *Property) itemsProblem(n int) string {
	if p.MinItems != nil && n < *p.MinItems {
		return fmt.Sprintf("pick at least %s, got %d", plural(*p.MinItems, "choice"), n)
	}
	if p.MaxItems != nil && n > *p.MaxItems {
		return fmt.Sprintf("pick at most %s, got %d", plural(*p.MaxItems, "choice"), n)
	}
	return ""
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
