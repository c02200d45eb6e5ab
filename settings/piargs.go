package settings

import "strings"

// PiArgs is what herdr-pi needs to know from a Pi command line: which mode
// Pi will run in and which session it opens. It mirrors Pi's own parser
// (pi-agent.md §2; Pi 1.6.0 cli/args.js), including its quirks: a value
// flag without a value falls through to the unknown-flag rule, an unknown
// long flag swallows the next non-flag argument, `--mode=x` is an unknown
// flag (not a mode), and `--` ends the options.
type PiArgs struct {
	// Subcommand is install, remove, uninstall, update, list, config, auth
	// or mcp when Pi's first argument names one ("" otherwise).
	Subcommand string
	Mode       string // "text", "json", "rpc" or "" (from --mode)
	Print      bool   // -p / --print
	Help       bool
	Version    bool
	Export     bool
	ListModels bool
	// BadOption is set by an unknown short option or an invalid --mode:
	// Pi refuses to start.
	BadOption bool

	Continue   bool   // -c
	Resume     bool   // -r (session picker)
	NoSession  bool   // --no-session
	Session    string // --session <path|id-prefix>
	SessionID  string // --session-id <id> (Pi 1.6.0)
	Fork       string // --fork <path|id-prefix>
	SessionDir string // --session-dir <dir>
}

var piSubcommands = map[string]bool{
	"install": true, "remove": true, "uninstall": true, "update": true,
	"list": true, "config": true, "auth": true, "mcp": true,
}

// piValueFlags take the next argument as their value (when there is one).
var piValueFlags = map[string]bool{
	"--provider": true, "--model": true, "--api-key": true, "--system-prompt": true,
	"--append-system-prompt": true, "--session": true, "--session-id": true, "--fork": true,
	"--session-dir": true, "--models": true, "--tools": true, "-t": true,
	"--exclude-tools": true, "-xt": true, "--thinking": true, "--export": true,
	"--extension": true, "-e": true, "--skill": true, "--prompt-template": true, "--theme": true,
}

// piSwitches are Pi's known flags without a value.
var piSwitches = map[string]bool{
	"--no-tools": true, "-nt": true, "--no-builtin-tools": true, "-nbt": true,
	"--no-extensions": true, "-ne": true, "--no-mcp": true, "--no-skills": true, "-ns": true,
	"--no-prompt-templates": true, "-np": true, "--no-themes": true, "--no-context-files": true,
	"-nc": true, "--verbose": true, "--approve": true, "-a": true, "--no-approve": true,
	"-na": true, "--offline": true,
}

// ParsePiArgs reads Pi's arguments (without the program name).
func ParsePiArgs(args []string) PiArgs {
	var p PiArgs
	if len(args) > 0 && piSubcommands[args[0]] {
		p.Subcommand = args[0]
		return p
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		hasNext := i+1 < len(args)
		next := ""
		if hasNext {
			next = args[i+1]
		}
		switch {
		case arg == "--":
			return p
		case arg == "--help" || arg == "-h":
			p.Help = true
		case arg == "--version" || arg == "-v":
			p.Version = true
		case arg == "--mode":
			if !hasNext || strings.HasPrefix(next, "-") {
				p.BadOption = true
				continue
			}
			i++
			if next != "text" && next != "json" && next != "rpc" {
				p.BadOption = true
				continue
			}
			p.Mode = next
		case arg == "--continue" || arg == "-c":
			p.Continue = true
		case arg == "--resume" || arg == "-r":
			p.Resume = true
		case arg == "--no-session":
			p.NoSession = true
		case arg == "--name" || arg == "-n":
			if hasNext {
				i++
			}
		case arg == "--print" || arg == "-p":
			p.Print = true
			if hasNext && !strings.HasPrefix(next, "@") && (!strings.HasPrefix(next, "-") || strings.HasPrefix(next, "---")) {
				i++ // the prompt
			}
		case arg == "--list-models":
			p.ListModels = true
			if hasNext && !strings.HasPrefix(next, "-") && !strings.HasPrefix(next, "@") {
				i++
			}
		case arg == "--use-theme" || arg == "--tui-mode":
			if hasNext && !strings.HasPrefix(next, "-") {
				i++
			}
		case piValueFlags[arg] && hasNext:
			i++
			switch arg {
			case "--session":
				p.Session = next
			case "--session-id":
				p.SessionID = next
			case "--fork":
				p.Fork = next
			case "--session-dir":
				p.SessionDir = next
			case "--export":
				p.Export = true
			}
		case piSwitches[arg] || strings.HasPrefix(arg, "@"):
		case strings.HasPrefix(arg, "--"):
			// An extension's flag: with no "=", it takes the next argument
			// unless that looks like a flag or a file.
			if !strings.Contains(arg, "=") && hasNext && !strings.HasPrefix(next, "-") && !strings.HasPrefix(next, "@") {
				i++
			}
		case strings.HasPrefix(arg, "-"):
			p.BadOption = true
		}
	}
	return p
}

// Interactive reports whether Pi, run with these arguments and with stdin
// and stdout terminals as given, starts its interactive TUI and a session:
// not a subcommand, not --help/--version/--export/--list-models, not print
// (-p, or a stdin or stdout that is not a terminal), JSON or RPC mode, and
// no option Pi rejects.
func (p PiArgs) Interactive(stdinTTY, stdoutTTY bool) bool {
	switch {
	case p.Subcommand != "", p.Help, p.Version, p.Export, p.ListModels, p.BadOption:
		return false
	case p.Mode == "json" || p.Mode == "rpc":
		return false
	case p.Print || !stdinTTY || !stdoutTTY:
		return false
	}
	return true
}
