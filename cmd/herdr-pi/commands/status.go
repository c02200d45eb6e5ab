package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"
)

// statusFormat names the shape of `status --json` (docs/status.md,
// docs/status.schema.json). It changes only when a field's meaning changes.
const statusFormat = "herdr-pi.status/1"

type statusOptions struct {
	JSON bool
	// Now is the clock ages are measured with.
	Now func() time.Time
}

func statusCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the wrapped agent's state and open reasons in this pane",
		Description: "Asks the herdr-pi wrapper of this pane (or of the agent running this command)\n" +
			"what it knows: the state (idle, working, blocked or unknown) and for how long, the\n" +
			"agent, every open reason it is blocked (kind, label, key, age), the session file\n" +
			"and whether the Pi probe is connected.\n" +
			"--json prints one object in the format of docs/status.md. Colour only on a\n" +
			"terminal, never with NO_COLOR set.\n\n" +
			"Exits 0 with the answer; 1 when no wrapper answers (the message says why and what\n" +
			"to do, e.g. how to start one); 2 for a mistake in the call. With --json stdout\n" +
			"holds one object then too, its error instead of the state: a script checks\n" +
			"the exit status or .error, never .state alone. In a pipe the shell reports\n" +
			"jq's status, not this one's: jq -e exits 1 when .state is null.\n\n" +
			"Examples:\n" +
			"  herdr-pi status\n" +
			"  herdr-pi status --json | jq -er .state",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print as JSON (format: docs/status.md)"}},
		Action: withArgs("status", func(c *cli.Context, args []string) error {
			if len(args) > 0 {
				err := usagef("status", "unexpected argument %q", args[0])
				if c.Bool("json") {
					return statusFailedJSON(f.IO.Out, err)
				}
				return err
			}
			return statusRun(c.Context, f, &statusOptions{JSON: c.Bool("json"), Now: time.Now})
		}),
	}
}

// statusReport is `status --json`: the wrapper's answer under a format tag.
type statusReport struct {
	Format string `json:"format"`
	control.Status
}

// statusFailedJSON prints a usage mistake as status's failure object
// (code "usage") and returns it: stderr says it in words, the exit status
// is 2.
func statusFailedJSON(w io.Writer, err error) error {
	return failedJSON(w, statusFormat, "usage", err)
}

func statusRun(ctx context.Context, f *Factory, opts *statusOptions) error {
	io := f.IO
	st, err := askStatus(ctx, f)
	if err != nil {
		if !opts.JSON {
			return err
		}
		// No wrapper answered: the same format tag and an error object
		// instead of the state, so a script reading stdout always gets
		// JSON. The object says it all: stderr stays quiet.
		fail := jsonFailure{Format: statusFormat}
		fail.Error.Code, fail.Error.Message = unreachable, err.Error()
		var we *wrapperError
		if errors.As(err, &we) {
			fail.Error.Code = we.Code
		}
		if err := writeJSON(io.Out, fail); err != nil {
			return err
		}
		return silentExit(exitError)
	}
	if opts.JSON {
		return writeJSON(io.Out, statusReport{Format: statusFormat, Status: st})
	}
	_, err = fmt.Fprint(io.Out, render.Status(st, control.Build(), opts.Now(), lookFor(io)))
	return err
}

// askStatus asks the wrapper of this pane for its status.
func askStatus(ctx context.Context, f *Factory) (control.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	c, err := dialWrapper(ctx, f)
	if err != nil {
		return control.Status{}, err
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return control.Status{}, err
	}
	if st.Reasons == nil {
		st.Reasons = []control.Reason{}
	}
	if st.State == "" {
		st.State = "unknown"
	}
	return st, nil
}

func writeJSON(w io.Writer, v any) error { return render.JSON(w, v) }
