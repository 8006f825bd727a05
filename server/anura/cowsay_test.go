package anura

import "testing"

// The expected art is what cowsay 3.03 prints (checked against its Perl
// wrapping, Text::Wrap with 40 columns).
func TestCowsay(t *testing.T) {
	const cowArt = `        \   ^__^
         \  (oo)\_______
            (__)\       )\/\
                ||----w |
                ||     ||
`
	for _, tc := range []struct{ msg, balloon string }{
		{"Hello, Tadpole!", ` _________________
< Hello, Tadpole! >
 -----------------
`},
		{"The quick brown fox jumps over the lazy dog and keeps running far away", ` _________________________________________
/ The quick brown fox jumps over the lazy \
\ dog and keeps running far away          /
 -----------------------------------------
`},
		{"para one\n  para two is here and it is long enough to wrap around the edge", ` ________________________________________
/ para one                               \
|                                        |
| para two is here and it is long enough |
\ to wrap around the edge                /
 ----------------------------------------
`},
		{"x abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz", ` _________________________________________
/ x                                       \
| abcdefghijklmnopqrstuvwxyzabcdefghijklm |
\ nopqrstuvwxyz                           /
 -----------------------------------------
`},
		{"tabs\tand   spaces\nare one space", ` _______________________________
< tabs and spaces are one space >
 -------------------------------
`},
		{"trailing spaces   ", ` __________________
< trailing spaces  >
 ------------------
`},
	} {
		if got, want := Cowsay(tc.msg), tc.balloon+cowArt; got != want {
			t.Errorf("Cowsay(%q):\n%s\nwant:\n%s", tc.msg, got, want)
		}
	}
}
