package commands

import (
	"errors"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// withArgs is the action of a command that takes arguments: it calls
// action with them once the flags given among or after them are set too.
// urfave/cli stops reading flags at the first argument, and people write
// "herdr-pi open 3f0c fixer --inspect" or "herdr-pi detect screen.txt
// --json". A --help among them shows the command's help. A flag it cannot
// read there is a usage mistake, and with --json among the words the
// command's failure object says so on stdout, as for one urfave/cli met.
func withArgs(cmd string, action func(c *cli.Context, args []string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		args, err := interleavedArgs(c, cmd)
		if errors.Is(err, errHelp) {
			return cli.ShowSubcommandHelp(c)
		}
		if err != nil {
			return usageFailedJSON(c, cmd, err)
		}
		return action(c, args)
	}
}

// errHelp is interleavedArgs meeting --help.
var errHelp = errors.New("help")

// interleavedArgs returns a command's arguments and sets the flags among
// them. A flag that takes a value takes it after "=" or as the next word,
// as urfave/cli reads it before the arguments; "--" ends the flags, and a
// lone "-" (stdin) is an argument.
func interleavedArgs(c *cli.Context, cmd string) ([]string, error) {
	var args []string
	rest := c.Args().Slice()
	if raw, _ := c.App.Metadata[argsKey].([]string); endedBefore(commandArgs(raw, cmd), rest, c.Command.Flags) {
		// urfave/cli took "--" away, and the flags with it.
		return rest, nil
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			return append(args, rest[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			args = append(args, a)
			continue
		}
		if strings.HasPrefix(a, "---") {
			// Go's flag package refuses it before the arguments; among
			// them it must not pass for the flag either.
			return nil, tooManyDashes(cmd, a)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			return nil, errHelp
		}
		fl := slices.IndexFunc(c.Command.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) })
		if fl < 0 {
			return nil, unknownFlag(cmd, a, c.Command.Flags)
		}
		if !hasValue {
			value = "true"
			if takesValue(c.Command.Flags[fl]) {
				if i+1 >= len(rest) {
					return nil, usagef(cmd, "%s needs a value", a)
				}
				i++
				value = rest[i]
			}
		}
		if err := c.Set(name, value); err != nil {
			var again *repeatedFlagError
			if errors.As(err, &again) {
				return nil, &usageError{cmd: cmd, err: again}
			}
			return nil, usagef(cmd, "%s: %v", a, err)
		}
	}
	return args, nil
}

// endedBefore says whether the words of a command line (those after the
// command's name) ended their flags with "--" just before rest, the
// arguments urfave/cli left: Go's flag package drops a "--" met before
// the first argument, so that rest alone no longer shows that its words
// are arguments whatever they look like. A "--" that is a flag's value
// (--agent --) ends nothing.
func endedBefore(words, rest []string, flags []cli.Flag) bool {
	n := len(words) - len(rest)
	if n < 1 || !slices.Equal(words[n:], rest) {
		return false
	}
	for i := 0; i < n; i++ {
		w := words[i]
		if w == "--" {
			return i == n-1
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		fl := slices.IndexFunc(flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) })
		if !hasValue && fl >= 0 && takesValue(flags[fl]) {
			i++ // its value, whatever it looks like
		}
	}
	return false
}

// takesValue says whether a flag reads a value (--agent pi) rather than
// being a switch (--json).
func takesValue(f cli.Flag) bool {
	v, ok := f.(interface{ TakesValue() bool })
	return ok && v.TakesValue()
}
