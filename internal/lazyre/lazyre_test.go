package lazyre

import "testing"

func TestCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+b$`)
	first := re()
	if !first.MatchString("aab") || first.MatchString("ba") {
		t.Fatalf("%v matches wrongly", first)
	}
	if re() != first {
		t.Fatal("a second call compiled the expression again")
	}
}

func TestInvalidExpressionPanicsWhenUsed(t *testing.T) {
	re := New(`(`) // no panic yet: nothing compiled
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid expression did not panic on use")
		}
	}()
	re()
}

func TestCheckFindsAnInvalidExpression(t *testing.T) {
	mu.Lock()
	saved := exprs
	exprs = nil
	mu.Unlock()
	t.Cleanup(func() { mu.Lock(); exprs = saved; mu.Unlock() })

	New(`^ok$`)
	if err := Check(); err != nil {
		t.Fatalf("Check with valid expressions: %v", err)
	}
	New(`[z-a]`)
	if err := Check(); err == nil {
		t.Fatal("Check did not report an invalid expression")
	}
}
