package traffic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/common/model"
)

// SnapshotCommand is the one command that writes a snapshot file: the answer of Prometheus's
// HTTP API to Query, as it comes. PROM is the server's URL.
func SnapshotCommand(window string) string {
	return fmt.Sprintf("curl -fsS --get \"$PROM/api/v1/query\" --data-urlencode 'query=%s' > observed.json", Query(window))
}

// ReadSnapshot reads a snapshot file: the JSON the Prometheus HTTP API returns for Query
// (`{"status":"success","data":{"resultType":"vector","result":[...]}}`), or the bare list of
// samples `promtool query instant -o json` prints. Errors name the path and, for JSON that does
// not parse, the line and column.
func ReadSnapshot(path string) (*Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Fault{Kind: FaultFile, Code: CodeFile, Setting: SettingFile, Where: path, Err: fmt.Errorf("cannot read the snapshot file: %w", err)}
	}
	return ParseSnapshot(path, data)
}

// ParseSnapshot is ReadSnapshot on the file's contents; name is the path for errors.
func ParseSnapshot(name string, data []byte) (*Snapshot, error) {
	fail := func(format string, args ...any) error {
		return &Fault{Kind: FaultFile, Code: CodeFile, Setting: SettingFile, Where: name, Err: fmt.Errorf("%s: "+format, append([]any{name}, args...)...)}
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fail("the file is empty; write it with %s", SnapshotCommand(DefaultWindow))
	}
	var vec model.Vector
	if trimmed[0] == '[' {
		if err := json.Unmarshal(data, &vec); err != nil {
			return nil, fail("%s", jsonPosition(data, err))
		}
	} else {
		var env struct {
			Status    string `json:"status"`
			ErrorType string `json:"errorType"`
			Error     string `json:"error"`
			Data      *struct {
				ResultType string          `json:"resultType"`
				Result     json.RawMessage `json:"result"`
			} `json:"data"`
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&env); err != nil {
			return nil, fail("%s", jsonPosition(data, err))
		}
		if dec.More() {
			return nil, fail("%s: more than one JSON document; the file must hold one answer", position(data, int(dec.InputOffset())))
		}
		switch {
		case env.Status == "error":
			return nil, fail("it holds an error answer of Prometheus (%s: %s), not evidence", env.ErrorType, env.Error)
		case env.Status != "success" || env.Data == nil:
			return nil, fail("it is not an answer of the Prometheus HTTP API: no \"status\": \"success\" with \"data\"")
		case env.Data.ResultType != model.ValVector.String():
			return nil, fail("its result is a %q, not the \"vector\" of an instant query", env.Data.ResultType)
		}
		if err := json.Unmarshal(env.Data.Result, &vec); err != nil {
			base := bytes.Index(data, env.Data.Result)
			return nil, fail("%s", jsonPositionAt(data, base, err))
		}
	}
	snap := &Snapshot{Source: name, Series: make([]Series, 0, len(vec))}
	// Prometheus never answers with two samples of one series: a vector cannot hold them.
	first := make(map[model.Fingerprint]int, len(vec))
	for i, s := range vec {
		if j, dup := first[s.Metric.Fingerprint()]; dup && s.Metric.Equal(vec[j].Metric) {
			return nil, fail("result[%d] repeats the labels of result[%d]: Prometheus never answers with one series twice, "+
				"so the file was edited or joined from several answers; write it again with %s", i, j, SnapshotCommand(DefaultWindow))
		}
		first[s.Metric.Fingerprint()] = i
		sr, err := seriesFromSample(s, fmt.Sprintf("result[%d]", i))
		if err != nil {
			return nil, fail("%s", err)
		}
		w := string(s.Metric[labelWindow])
		switch {
		case w == "":
			return nil, fail("result[%d] has no %s label: it is not an answer to meshscope's query", i, labelWindow)
		case snap.Window == "":
			snap.Window = w
		case w != snap.Window:
			return nil, fail("result[%d] covers the window %q, but result[0] covers %q", i, w, snap.Window)
		}
		snap.Series = append(snap.Series, sr)
	}
	return snap, nil
}

// jsonPosition names where in data a JSON error happened, as "line L, column C: ...".
func jsonPosition(data []byte, err error) string { return jsonPositionAt(data, 0, err) }

// jsonPositionAt is jsonPosition for an error of decoding data[base:].
func jsonPositionAt(data []byte, base int, err error) string {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("%s: %v", position(data, base+int(syntax.Offset)), err)
	case errors.As(err, &typ):
		return fmt.Sprintf("%s: %v", position(data, base+int(typ.Offset)), err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("%s: the JSON ends early", position(data, len(data)))
	}
	if base > 0 {
		return fmt.Sprintf("in the result starting at %s: %v", position(data, base), err)
	}
	return err.Error()
}

// position turns a byte offset into "line L, column C" (1-based).
func position(data []byte, off int) string {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}
