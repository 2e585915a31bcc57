package app

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
)

// shellWords splits a command line as sh would for the examples: words,
// single and double quotes; it stops at a pipe, a redirection, a comment
// or a command separator.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("|>#;&", r) && !inWord:
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// exampleCommands are the imagectl command lines of an Example text: the
// arguments after "imagectl" (or bin/imagectl), continuation lines joined,
// a placeholder digest "sha256:..." made a real-looking one.
func exampleCommands(example string) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.ReplaceAll(example, "\\\n", " "), "\n") {
		words := shellWords(strings.ReplaceAll(line, "sha256:...", "sha256:"+strings.Repeat("0", 64)))
		for len(words) > 0 && strings.Contains(words[0], "=") { // VAR=value
			words = words[1:]
		}
		if len(words) == 0 || (words[0] != "imagectl" && !strings.HasSuffix(words[0], "/imagectl")) {
			continue
		}
		out = append(out, words[1:])
	}
	return out
}

// Every command line of every help example parses as written: the verb
// exists, every flag exists and takes the value given, and the number (and
// form) of arguments is one the verb accepts.
func TestHelpExamplesParse(t *testing.T) {
	n := 0
	base.WalkCommands(NewRootCommand(io.Discard, io.Discard), func(c *cobra.Command) {
		for _, args := range exampleCommands(c.Example) {
			n++
			root := NewRootCommand(io.Discard, io.Discard) // parsing sets flags: a tree per example
			cmd, rest, err := root.Find(args)
			if err != nil {
				t.Errorf("%s example %q: %v", c.CommandPath(), strings.Join(args, " "), err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s example %q: %v", c.CommandPath(), strings.Join(args, " "), err)
				continue
			}
			if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
				t.Errorf("%s example %q: %v", c.CommandPath(), strings.Join(args, " "), err)
			}
		}
	})
	if n < 30 {
		t.Errorf("found %d example command lines, want every verb's", n)
	}
}
