package owner

import (
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
