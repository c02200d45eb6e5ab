// Command herdr-pi runs coding agents inside Herdr panes and reports what
// they are doing. All of its work happens in package commands.
package main

import (
	"context"
	"os"

	"github.com/herdr-pi/herdr-pi/cmd/herdr-pi/commands"
)

func main() {
	os.Exit(commands.Main(context.Background(), os.Args, commands.SystemIO()))
}
