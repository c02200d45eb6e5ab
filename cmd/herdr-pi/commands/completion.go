package commands

import (
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/handoff"
	"github.com/herdr-pi/herdr-pi/handoff/store"
)

// completionFlag is how urfave/cli asks herdr-pi for completions: the
// scripts run the words typed so far, then the word being completed (even
// an empty one), then this flag.
const completionFlag = "--generate-bash-completion"

// completingKey holds, in the app's metadata, the word being completed
// (runWith takes it out of the arguments). urfave/cli's own completer reads
// it from os.Args, which an in-process run does not have.
const completingKey = "completing"

// scripts are the completion scripts, one per shell (completion/*). They
// ask herdr-pi itself for candidates, so they never go stale, and none
// needs the bash-completion package. When herdr-pi offers nothing (the
// agent's own arguments after `wrap pi`, a FILE), the shell completes file
// names.
//
//go:embed completion
var scripts embed.FS

// shells are the shells `completion` writes scripts for.
var shells = map[string]string{"bash": script("bash"), "zsh": script("zsh"), "fish": script("fish")}

func script(shell string) string {
	b, err := scripts.ReadFile("completion/herdr-pi." + shell)
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	return string(b)
}

func completionCommand(f *Factory) *cli.Command {
	cmd := &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: "The script asks herdr-pi itself at each TAB: commands, flags, doctor's sections,\n" +
			"and the runs and attempts open and close take, from the workflow store\n" +
			"(docs/completion.md). Exits 0 with the script, 2 for a mistake in the call (no\n" +
			"shell, one it has no script for, an unknown flag).\n\n" +
			"Examples:\n" +
			"  source <(herdr-pi completion bash)          # in ~/.bashrc\n" +
			"  source <(herdr-pi completion zsh)           # in ~/.zshrc, after compinit\n" +
			"  herdr-pi completion fish > ~/.config/fish/completions/herdr-pi.fish",
		Action: withArgs("completion", func(c *cli.Context, args []string) error {
			shell := ""
			if len(args) > 0 {
				shell = args[0]
			}
			switch script, ok := shells[shell]; {
			case len(args) > 1:
				return usagef("completion", "one shell at most (got %d)", len(args))
			case ok:
				_, err := fmt.Fprint(f.IO.Out, script)
				return err
			case shell == "":
				return usagef("completion", "which shell? (bash, zsh or fish)")
			default:
				return usagef("completion", "no completion for %q (bash, zsh or fish)", shell)
			}
		}),
	}
	cmd.BashComplete = completer(cmd, func(_ *cli.Context, given []string) []string {
		if len(given) > 0 {
			return nil
		}
		return []string{"bash", "zsh", "fish"}
	})
	return cmd
}

// completer answers a completion request for cmd (nil: herdr-pi itself):
// its flags while the word starts with a dash and no argument came yet
// (flags go before arguments), else its subcommands, else what values
// offers for the arguments given so far.
func completer(cmd *cli.Command, values func(c *cli.Context, given []string) []string) cli.BashCompleteFunc {
	return func(c *cli.Context) {
		cur, _ := c.App.Metadata[completingKey].(string)
		given := c.Args().Slice()
		var flags []cli.Flag
		var subs []*cli.Command
		if cmd == nil {
			flags, subs = c.App.VisibleFlags(), c.App.VisibleCommands()
		} else {
			flags, subs = cmd.VisibleFlags(), cmd.VisibleCommands()
		}
		var out []string
		switch {
		case strings.HasPrefix(cur, "-"):
			if len(given) > 0 {
				break // after an argument, a flag is an argument too (the agent's, after `wrap pi`)
			}
			for _, fl := range flags {
				if c.IsSet(fl.Names()[0]) && !repeatable(fl) {
					continue // already on the line
				}
				for _, name := range fl.Names() {
					if len(name) > 1 {
						out = append(out, "--"+name)
					}
				}
			}
		case len(subs) > 0:
			if len(given) == 0 {
				out = commandNames(subs)
			}
		case values != nil:
			out = values(c, given)
		}
		for _, s := range out {
			if strings.HasPrefix(s, cur) && !slices.Contains(given, s) {
				fmt.Fprintln(c.App.Writer, s)
			}
		}
	}
}

// repeatable says whether a flag may be given more than once (a slice flag
// collects every value).
func repeatable(fl cli.Flag) bool {
	s, ok := fl.(cli.DocGenerationSliceFlag)
	return ok && s.IsSliceFlag()
}

// completing is cmd completing its arguments with values (see completer).
func completing(cmd *cli.Command, values func(c *cli.Context, given []string) []string) *cli.Command {
	cmd.BashComplete = completer(cmd, values)
	return cmd
}

// workflowCompleter completes open's and close's arguments from the
// workflow store: a run (its ref, the shortest prefix that names it from
// anywhere), then for open an attempt of that run (what open --list
// calls its selector). Reading the store is local and capped (settings
// reads only regular files of bounded size), so a TAB never waits on
// Herdr or the network. withAttempt is open's: close, and open --list,
// take a run alone.
func workflowCompleter(f *Factory, withAttempt bool) func(c *cli.Context, given []string) []string {
	return func(c *cli.Context, given []string) []string {
		var words []string
		for _, w := range given {
			if !strings.HasPrefix(w, "-") {
				words = append(words, w)
			}
		}
		list := c.Bool("list") || slices.ContainsFunc(given, isListFlag)
		cwd := f.IO.Dir
		st := store.New(f.Paths().Home, cwd)
		switch {
		case len(words) == 0:
			refs, err := st.ShortIDs()
			if err != nil {
				return nil
			}
			var out []string
			for _, ref := range refs {
				out = append(out, ref)
			}
			slices.Sort(out)
			return plainWords(out)
		case len(words) == 1 && withAttempt && !list:
			listing, err := handoff.List(st, f.Paths(), words[0])
			if err != nil || len(listing.Runs) != 1 {
				return nil
			}
			var out []string
			for _, ag := range listing.Runs[0].Agents {
				for _, a := range ag.Attempts {
					out = append(out, a.Selector)
				}
			}
			return plainWords(out)
		}
		return nil
	}
}

// plainWords are the words a shell can take as they are: bash's compgen
// -W expands its word list, so a name from a workflow's state.json such
// as "$(…)" would run, and one with a space would split. Anything but
// letters, digits and . _ - # : @ + , / = is left out (the person types
// that name themself).
func plainWords(words []string) []string {
	return slices.DeleteFunc(words, func(w string) bool {
		return w == "" || strings.ContainsFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-#:@+,/=", r))
		})
	})
}
