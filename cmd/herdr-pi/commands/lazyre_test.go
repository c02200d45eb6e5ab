package commands

import (
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/lazyre"
)

// Every package of the program is linked into this test, so every regular
// expression compiled on first use (internal/lazyre) is registered: each
// must compile, as it had to when they were compiled at start.
func TestEveryLazyExpressionCompiles(t *testing.T) {
	if err := lazyre.Check(); err != nil {
		t.Fatal(err)
	}
}
