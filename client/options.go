package client

import (
	"net/mail"
	"net/url"
	"strings"
	"time"
)

// Options of the schema builder. Each constructor returns the interface of
// the kinds it applies to, so an option on the wrong kind of property (a
// MinLength on an integer) does not compile.
type (
	// StringOption configures String.
	StringOption interface{ applyString(*property) }
	// NumberOption configures Integer and Number.
	NumberOption interface{ applyNumber(*property) }
	// BoolOption configures Bool.
	BoolOption interface{ applyBool(*property) }
	// ChoiceOption configures Choose and ChooseTitled.
	ChoiceOption interface{ applyChoice(*property) }
	// ManyOption configures ChooseMany and ChooseManyTitled.
	ManyOption interface{ applyMany(*property) }
	// Option applies to every kind of property.
	Option interface {
		StringOption
		NumberOption
		BoolOption
		ChoiceOption
		ManyOption
	}
)

type (
	commonOption func(*property)
	stringOption func(*property)
	numberOption func(*property)
	boolOption   func(*property)
	choiceOption func(*property)
	manyOption   func(*property)
)

func (f commonOption) applyString(p *property) { f(p) }
func (f commonOption) applyNumber(p *property) { f(p) }
func (f commonOption) applyBool(p *property)   { f(p) }
func (f commonOption) applyChoice(p *property) { f(p) }
func (f commonOption) applyMany(p *property)   { f(p) }
func (f stringOption) applyString(p *property) { f(p) }
func (f numberOption) applyNumber(p *property) { f(p) }
func (f boolOption) applyBool(p *property)     { f(p) }
func (f choiceOption) applyChoice(p *property) { f(p) }
func (f manyOption) applyMany(p *property)     { f(p) }

// setOnce stores v in *field, or records a problem if the option was given before.
func setOnce[T any](p *property, field **T, what string, v T) {
	if *field != nil {
		p.problem("%s is given twice", what)
		return
	}
	*field = &v
}

// Title is the property's short label (the question's header).
func Title(s string) Option {
	return commonOption(func(p *property) {
		if strings.TrimSpace(s) == "" {
			p.problem("empty title")
			return
		}
		setOnce(p, &p.title, "title", s)
	})
}

// Description is the property's question text.
func Description(s string) Option {
	return commonOption(func(p *property) {
		if strings.TrimSpace(s) == "" {
			p.problem("empty description")
			return
		}
		setOnce(p, &p.description, "description", s)
	})
}

// Optional lets the operator leave the property unanswered; it is then
// missing from the content (or holds its default).
func Optional() Option { return commonOption(func(p *property) { p.optional = true }) }

// MinLength is the fewest characters (runes) a string may have.
func MinLength(n int) StringOption {
	return stringOption(func(p *property) { count(p, &p.minLength, "minLength", n) })
}

// MaxLength is the most characters (runes) a string may have.
func MaxLength(n int) StringOption {
	return stringOption(func(p *property) { count(p, &p.maxLength, "maxLength", n) })
}

func count(p *property, field **int, what string, n int) {
	if n < 0 {
		p.problem("%s %d is negative", what, n)
		return
	}
	setOnce(p, field, what, n)
}

// Email asks for an email address (format "email").
func Email() StringOption { return format("email") }

// URI asks for an absolute URI (format "uri").
func URI() StringOption { return format("uri") }

// Date asks for a date, YYYY-MM-DD (format "date").
func Date() StringOption { return format("date") }

// DateTime asks for an RFC 3339 date and time (format "date-time").
func DateTime() StringOption { return format("date-time") }

func format(name string) StringOption {
	return stringOption(func(p *property) {
		if p.format != "" {
			p.problem("format %q is given after format %q (a string has one format)", name, p.format)
			return
		}
		p.format = name
	})
}

// validFormat reports whether s is a valid value of the MCP string format f,
// as strictly as questiond checks answers.
func validFormat(f, s string) bool {
	switch f {
	case "email":
		a, err := mail.ParseAddress(s)
		return err == nil && a.Name == "" && a.Address == s
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != "" && isASCII(s)
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// DefaultString pre-fills a string property.
func DefaultString(s string) StringOption {
	return stringOption(func(p *property) { setOnce(p, &p.defaultString, "default", s) })
}

// Min is the smallest number allowed (inclusive).
func Min(x float64) NumberOption {
	return numberOption(func(p *property) { setOnce(p, &p.minimum, "minimum", x) })
}

// Max is the largest number allowed (inclusive).
func Max(x float64) NumberOption {
	return numberOption(func(p *property) { setOnce(p, &p.maximum, "maximum", x) })
}

// DefaultNumber pre-fills a number or integer property (an integer's default
// must be whole).
func DefaultNumber(x float64) NumberOption {
	return numberOption(func(p *property) { setOnce(p, &p.defaultNumber, "default", x) })
}

// DefaultBool pre-sets a boolean property.
func DefaultBool(b bool) BoolOption {
	return boolOption(func(p *property) { setOnce(p, &p.defaultBool, "default", b) })
}

// DefaultChoice pre-selects one of a single choice's values.
func DefaultChoice(v string) ChoiceOption {
	return choiceOption(func(p *property) { setOnce(p, &p.defaultChoice, "default", v) })
}

// MinItems is the fewest picks of a multi-select.
func MinItems(n int) ManyOption {
	return manyOption(func(p *property) { count(p, &p.minItems, "minItems", n) })
}

// MaxItems is the most picks of a multi-select.
func MaxItems(n int) ManyOption {
	return manyOption(func(p *property) { count(p, &p.maxItems, "maxItems", n) })
}

// DefaultChoices pre-selects values of a multi-select (none: an empty list).
func DefaultChoices(values ...string) ManyOption {
	return manyOption(func(p *property) {
		if p.defaultChoices != nil {
			p.problem("default is given twice")
			return
		}
		p.defaultChoices = append([]string{}, values...)
	})
}
