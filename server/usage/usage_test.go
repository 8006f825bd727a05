package usage

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

func TestTable(t *testing.T) {
	var tab Table
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := tab.For([]string{"b", "a"}[i%2])
			c.Request()
			AddTokens(NewContext(context.Background(), c), 3, 2)
			if i%10 == 0 {
				c.Limited()
			}
		}()
	}
	wg.Wait()
	AddTokens(context.Background(), 1, 1) // no counters: nothing
	got := fmt.Sprint(tab.Snapshot())
	if want := "[{a 25 0 75 50} {b 25 5 75 50}]"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	var r Reader = &tab
	if len(r.Snapshot()) != 2 || NewContext(context.Background(), nil) != context.Background() {
		t.Fatal("reader")
	}
}
