package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

type statusOptions struct {
	JSON bool
}

func statusCommand(io IO) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the wrapped agent's state and open reasons in this pane",
		Description: "Asks the herdr-pi wrapper of this pane (or of the agent running this command).\n" +
			"--json prints one object: state (idle|working|blocked|unknown), reasons (kind, key,\n" +
			"label), session_file, child_pid, wrapper_pid, probe_connected.\n\n" +
			"Examples:\n" +
			"  herdr-pi status\n" +
			"  herdr-pi status --json",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print as JSON"}},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("status", "unexpected argument %q", c.Args().First())
			}
			return statusRun(c.Context, io, &statusOptions{JSON: c.Bool("json")})
		},
	}
}

func statusRun(ctx context.Context, io IO, opts *statusOptions) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	c, err := dialWrapper(ctx, io)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if st.Reasons == nil {
		st.Reasons = []control.Reason{}
	}
	if opts.JSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	printStatus(io.Out, st)
	return nil
}

// printStatus writes the human form. Labels come from other programs
// (extensions, hooks): control characters are made visible-safe before
// they reach the terminal.
func printStatus(w io.Writer, st control.Status) {
	state := st.State
	if state == "" {
		state = "unknown"
	}
	fmt.Fprintf(w, "state:   %s", clean(state))
	if !st.Since.IsZero() {
		fmt.Fprintf(w, " (since %s)", st.Since.Local().Format("15:04:05"))
	}
	fmt.Fprintln(w)
	agent := clean(st.Agent)
	if agent == "" {
		agent = "agent"
	}
	probe := "probe not connected"
	if st.ProbeConnected {
		probe = "probe connected"
	}
	if st.ChildPID > 0 {
		fmt.Fprintf(w, "agent:   %s (pid %d), %s\n", agent, st.ChildPID, probe)
	} else {
		fmt.Fprintf(w, "agent:   %s, %s\n", agent, probe)
	}
	fmt.Fprintf(w, "wrapper: pid %d\n", st.WrapperPID)
	if st.SessionFile != "" {
		fmt.Fprintf(w, "session: %s\n", clean(st.SessionFile))
	}
	if len(st.Reasons) == 0 {
		fmt.Fprintln(w, "reasons: none")
		return
	}
	fmt.Fprintln(w, "reasons:")
	for _, r := range st.Reasons {
		line := fmt.Sprintf("  %-13s %s", clean(r.Kind), clean(r.Key))
		if r.Label != "" && r.Label != r.Key {
			line += "  " + clean(r.Label)
		}
		fmt.Fprintln(w, line)
	}
}

// clean replaces control characters (ESC, BEL, C1, newlines) with spaces.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
}
