package mesh

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Document is one document of a multi-document YAML stream.
type Document struct {
	Index int    // 0-based, counting the documents SplitDocuments returns
	Line  int    // the 1-based line of the stream the document starts on
	Data  []byte // its text, without the "---" separator
}

// SplitDocuments splits a YAML stream at its "---" lines, as Kubernetes' YAML reader does: a
// separator may be followed by a comment only, and consecutive separators make no empty
// document. Each document remembers the line of the stream it starts on, so that an error in it
// can name the line of the file, not of the document.
func SplitDocuments(source string, data []byte) ([]Document, error) {
	var (
		docs  []Document
		cur   []byte
		start = 1
	)
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i+1], data[i+1:]
		} else {
			l, data = data, nil
		}
		if rest, ok := bytes.CutPrefix(l, []byte("---")); ok {
			rest = bytes.TrimSpace(rest)
			if len(rest) > 0 && rest[0] != '#' {
				idx := len(docs)
				if len(cur) > 0 {
					idx++ // the separator ends the document in cur
				}
				return docs, &DocumentError{Source: source, Index: idx, Line: line,
					Err: fmt.Errorf("a document separator is followed by %q: put only \"---\" (and a comment) on its line", rest)}
			}
			if len(cur) > 0 {
				docs = append(docs, Document{Index: len(docs), Line: start, Data: cur})
			}
			cur, start = nil, line+1
			continue
		}
		if cur == nil {
			start = line
		}
		cur = append(cur, l...)
	}
	if len(cur) > 0 {
		docs = append(docs, Document{Index: len(docs), Line: start, Data: cur})
	}
	return docs, nil
}

// yamlLine finds the "line N" a YAML parser error names.
var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// ToJSON converts the document to JSON, strictly: a key given twice in one mapping (two
// manifests concatenated without "---", a pasted field) is an error, as kubectl's strict
// decoding makes it, rather than the last value silently winning. Errors are *DocumentError
// values whose Line, and the lines their message names, count from the start of the stream.
func (d Document) ToJSON(source string) ([]byte, error) {
	js, err := yaml.YAMLToJSONStrict(d.Data)
	if err == nil {
		return js, nil
	}
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	// Each problem on a line of its own, "line N: what"; N counts from the document's start.
	var parts []string
	errLine := 0
	for _, part := range strings.Split(msg, "\n") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		part = yamlLine.ReplaceAllStringFunc(part, func(m string) string {
			n, convErr := strconv.Atoi(yamlLine.FindStringSubmatch(m)[1])
			if convErr != nil {
				return m
			}
			n += d.Line - 1
			if errLine == 0 {
				errLine = n
			}
			return fmt.Sprintf("line %d", n)
		})
		parts = append(parts, part)
	}
	if errLine == 0 {
		errLine = d.Line
	}
	// The first problem's line is the error's Line; DocumentError prints it already.
	if len(parts) > 0 {
		parts[0] = strings.TrimPrefix(parts[0], fmt.Sprintf("line %d: ", errLine))
		parts[0] = strings.TrimPrefix(parts[0], fmt.Sprintf("yaml: line %d: ", errLine))
	}
	msg = strings.Join(parts, "; ")
	if strings.Contains(msg, "already set in map") {
		msg += `. A key may appear once per mapping`
		if strings.Contains(msg, `key "apiVersion"`) || strings.Contains(msg, `key "kind"`) {
			msg += `: are two manifests concatenated without a "---" line between them?`
		} else {
			msg += `: remove one of them`
		}
	}
	return nil, &DocumentError{Source: source, Index: d.Index, Line: errLine, Err: errors.New(msg)}
}
