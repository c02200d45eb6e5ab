package commands

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The scripts ask herdr-pi itself for candidates through urfave/cli's
// --generate-bash-completion flag, so they never go stale. None of them needs
// the bash-completion package.
const bashCompletion = `# herdr-pi completion for bash: source <(herdr-pi completion bash)
_herdr_pi_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local candidates
  if [[ $cur == -* ]]; then
    candidates=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    candidates=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -o bashdefault -o default -F _herdr_pi_complete herdr-pi
`

const zshCompletion = `#compdef herdr-pi
# herdr-pi completion for zsh: source <(herdr-pi completion zsh)
_herdr_pi_complete() {
  local -a candidates
  local cur=${words[CURRENT]}
  local -a before=(${words[1,CURRENT-1]})
  if [[ $cur == -* ]]; then
    candidates=(${(f)"$(${before[@]} $cur --generate-bash-completion 2>/dev/null)"})
  else
    candidates=(${(f)"$(${before[@]} --generate-bash-completion 2>/dev/null)"})
  fi
  if (( ${#candidates} )); then
    compadd -- ${candidates[@]}
  else
    _files
  fi
}
compdef _herdr_pi_complete herdr-pi
`

func completionCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: "Examples:\n" +
			"  source <(herdr-pi completion bash)          # in ~/.bashrc\n" +
			"  source <(herdr-pi completion zsh)           # in ~/.zshrc, after compinit\n" +
			"  herdr-pi completion fish > ~/.config/fish/completions/herdr-pi.fish",
		Action: func(c *cli.Context) error {
			switch c.Args().First() {
			case "bash":
				_, err := fmt.Fprint(io.Out, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(io.Out, zshCompletion)
				return err
			case "fish":
				script, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(io.Out, script)
				return err
			case "":
				return usagef("completion", "which shell? (bash, zsh or fish)")
			default:
				return usagef("completion", "no completion for %q (bash, zsh or fish)", c.Args().First())
			}
		},
	}
}
