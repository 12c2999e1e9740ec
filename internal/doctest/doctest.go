// Package doctest finds the runnable shell examples of eddy's Markdown
// docs, so a test (TestDocs in cmd/eddy) can run them against a fresh
// server and the docs cannot drift from what eddy does.
//
// A fenced block is runnable when its info string is "sh runnable" (or
// "bash runnable"): GitHub still highlights it as shell, and a reader sees
// nothing else. Every other block is prose. The runnable blocks of one
// document run in order in one bash process, so variables set by one
// block (API, AUTH, ...) hold in the next; each document gets its own
// server and data directory. docs/README.md says how to write them.
package doctest

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// Marker is the word of a fence's info string that makes it runnable.
const Marker = "runnable"

// Block is one runnable example.
type Block struct {
	// Line is the 1-based line of the block's opening fence.
	Line int
	// Code is the block's text, lines joined with "\n", ending in "\n".
	Code string
}

// Extract returns the runnable blocks of a Markdown document in order. A
// runnable fence left open at the end of the document is an error, so a
// typo cannot silently turn the rest of a document into one example.
func Extract(markdown []byte) ([]Block, error) {
	var (
		blocks []Block
		cur    *Block
		code   strings.Builder
		fence  string // the open fence ("```" or longer, or "~~~"), "" outside one
		line   int
	)
	sc := bufio.NewScanner(bytes.NewReader(markdown))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimLeft(text, " ")
		if fence == "" {
			if f, info, ok := openFence(trimmed); ok {
				fence = f
				if runnable(info) {
					cur = &Block{Line: line}
					code.Reset()
				}
			}
			continue
		}
		if closesFence(trimmed, fence) {
			if cur != nil {
				cur.Code = code.String()
				blocks = append(blocks, *cur)
				cur = nil
			}
			fence = ""
			continue
		}
		if cur != nil {
			code.WriteString(text)
			code.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read markdown: %w", err)
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: runnable block is never closed", cur.Line)
	}
	return blocks, nil
}

// openFence reports whether line opens a fenced block (three or more
// backticks or tildes) and returns the fence and its info string.
func openFence(line string) (fence, info string, ok bool) {
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(line) && line[n] == c {
			n++
		}
		if n >= 3 {
			info = strings.TrimSpace(line[n:])
			if c == '`' && strings.Contains(info, "`") {
				return "", "", false // inline code, not a fence
			}
			return line[:n], info, true
		}
	}
	return "", "", false
}

// closesFence reports whether line closes a block opened by fence: the
// same character, at least as many, nothing after them.
func closesFence(line, fence string) bool {
	rest := strings.TrimRight(line, " \t")
	if len(rest) < len(fence) {
		return false
	}
	return strings.Trim(rest, fence[:1]) == ""
}

// runnable reports whether a fence's info string marks a runnable shell
// block: the language sh or bash, then the marker word.
func runnable(info string) bool {
	fields := strings.Fields(info)
	if len(fields) < 2 || (fields[0] != "sh" && fields[0] != "bash") {
		return false
	}
	for _, f := range fields[1:] {
		if f == Marker {
			return true
		}
	}
	return false
}
