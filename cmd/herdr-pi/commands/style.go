package commands

import "github.com/herdr-pi/herdr-pi/cmd/herdr-pi/internal/render"

// look is how a command draws its human output (cmd/herdr-pi/internal/render).
type look = render.Look

// lookFor decides from the IO: colour as IO.color says, and the width of
// stdout when it is a terminal.
func lookFor(io IO) look {
	_, _, width := io.stdoutTerminal()
	return render.New(io.color(), width)
}
