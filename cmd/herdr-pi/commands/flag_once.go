package commands

import (
	"flag"
	"fmt"

	"github.com/urfave/cli/v2"
)

// Every flag of herdr-pi that takes a value takes one: "--label a --label
// b" is a mistake (which was meant?), where Go's flag package would keep b
// without a word. urfave/cli's flags cannot count what they were given, so
// newApp puts each value flag in a form that can (singleValued): its Apply
// sets the flag up as urfave/cli does, then wraps each value it made in a
// onceValue, which refuses a second Set. That one place covers the flags
// urfave/cli reads before the arguments and those withArgs reads among
// them (through Context.Set, the same values), every command at every
// depth, and any value flag added later; a flag meant to repeat (a slice
// flag) is not a StringFlag or an IntFlag and stays as it is.
//
// (A GenericFlag with a counting Value would need a Value type for each
// kind of flag, written into every command by hand, and one Value in the
// flag's definition serves every parse, so its count would outlive one:
// help runs the app again. Reading the raw arguments before urfave/cli
// would mean parsing them twice, with rules of our own for "=", "--" and
// wrap's agent words.)

// singleValued is fl in its given-once form, when it takes a value.
func singleValued(fl cli.Flag) cli.Flag {
	switch f := fl.(type) {
	case *cli.StringFlag:
		return &onceStringFlag{StringFlag: *f}
	case *cli.IntFlag:
		return &onceIntFlag{IntFlag: *f}
	}
	return fl
}

type onceStringFlag struct {
	cli.StringFlag
	onceParse
}

func (f *onceStringFlag) Apply(set *flag.FlagSet) error {
	if err := f.StringFlag.Apply(set); err != nil {
		return err
	}
	f.giveOnce(set, f.Names())
	return nil
}

type onceIntFlag struct {
	cli.IntFlag
	onceParse
}

func (f *onceIntFlag) Apply(set *flag.FlagSet) error {
	if err := f.IntFlag.Apply(set); err != nil {
		return err
	}
	f.giveOnce(set, f.Names())
	return nil
}

// onceParse is what a given-once flag knows of the parse under way: the
// refusal it gave, if any. Go's flag package makes a string of that error
// and urfave/cli hands OnUsageError the string and no flag set, so the
// flag keeps the error itself for repeatedFlag. Apply starts every parse
// afresh.
type onceParse struct{ again *repeatedFlagError }

func (p *onceParse) repeated() *repeatedFlagError { return p.again }

// giveOnce starts a parse: it wraps the values of names in set (the flag
// set's own, made for this parse) so each refuses a second Set.
func (p *onceParse) giveOnce(set *flag.FlagSet, names []string) {
	p.again = nil
	for _, name := range names {
		if fl := set.Lookup(name); fl != nil {
			fl.Value = &onceValue{Value: fl.Value, name: name, parse: p}
		}
	}
}

// onceValue is a flag's value that may be set once.
type onceValue struct {
	flag.Value
	name  string
	first *string // the value given, once it is
	parse *onceParse
}

func (v *onceValue) Set(s string) error {
	if v.first != nil {
		v.parse.again = &repeatedFlagError{name: v.name, first: *v.first, second: s}
		return v.parse.again
	}
	v.first = &s
	return v.Value.Set(s)
}

// Get is the wrapped value's, for cli.Context.Value.
func (v *onceValue) Get() any {
	if g, ok := v.Value.(flag.Getter); ok {
		return g.Get()
	}
	return v.String()
}

// repeatedFlagError is a single-valued flag given a second time.
type repeatedFlagError struct{ name, first, second string }

func (e *repeatedFlagError) Error() string {
	return fmt.Sprintf("%s given twice (%q and %q): give it once", dashed(e.name), clipArg(e.first), clipArg(e.second))
}

// repeatedFlag is the refusal a flag of c's command gave to being set
// twice in this parse, if one did, for OnUsageError.
func repeatedFlag(c *cli.Context) error {
	if c == nil || c.Command == nil {
		return nil
	}
	for _, fl := range c.Command.Flags {
		if f, ok := fl.(interface{ repeated() *repeatedFlagError }); ok && f.repeated() != nil {
			return f.repeated()
		}
	}
	return nil
}
