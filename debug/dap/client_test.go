package dap

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	godap "github.com/google/go-dap"
)

// adapter is the far end of a pipe, scripted by the test.
type adapter struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func newPair(t *testing.T) (*Client, *adapter) {
	a, b := net.Pipe()
	c := NewClient(a)
	t.Cleanup(func() { c.Close() })
	return c, &adapter{t: t, conn: b, r: bufio.NewReader(b)}
}

func (a *adapter) read() map[string]any {
	a.t.Helper()
	b, err := godap.ReadBaseMessage(a.r)
	if err != nil {
		a.t.Fatalf("adapter read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		a.t.Fatal(err)
	}
	return m
}

func (a *adapter) send(raw string) {
	a.t.Helper()
	if err := godap.WriteBaseMessage(a.conn, []byte(raw)); err != nil {
		a.t.Fatalf("adapter write: %v", err)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestRequestResponseMatchingAndCustomEvents(t *testing.T) {
	c, a := newPair(t)
	go func() {
		req := a.read() // initialize, seq 1
		// Custom debugpy events arrive between the request and its answer.
		a.send(`{"seq":1,"type":"event","event":"debugpyWaitingForServer","body":{"host":"127.0.0.1","port":5678}}`)
		a.send(`{"seq":2,"type":"event","event":"debugpySockets","body":{"sockets":[]}}`)
		a.send(`{"seq":3,"type":"event","event":"initialized"}`)
		a.send(`{"seq":4,"type":"response","request_seq":` + jsonNum(req["seq"]) + `,"success":true,"command":"initialize","body":{"supportsConfigurationDoneRequest":true}}`)
		req = a.read() // a command go-dap does not model
		a.send(`{"seq":5,"type":"response","request_seq":` + jsonNum(req["seq"]) + `,"success":true,"command":"debugpySystemInfo","body":{}}`)
		req = a.read()
		a.send(`{"seq":6,"type":"response","request_seq":` + jsonNum(req["seq"]) + `,"success":false,"command":"attach","message":"Server[pid=42] is already being debugged.","body":{"error":{"id":0,"format":"Server[pid=42] is already being debugged."}}}`)
	}()
	resp, err := c.Do(ctx(t), &godap.InitializeRequest{Request: godap.Request{Command: "initialize"}, Arguments: godap.InitializeRequestArguments{AdapterID: "debugpy"}})
	if err != nil {
		t.Fatal(err)
	}
	if ir, ok := resp.(*godap.InitializeResponse); !ok || !ir.Body.SupportsConfigurationDoneRequest {
		t.Fatalf("initialize response %#v", resp)
	}
	if _, err := c.WaitEvent(ctx(t), "initialized"); err != nil {
		t.Fatal(err)
	}
	resp, err = c.Do(ctx(t), &godap.AttachRequest{Request: godap.Request{Command: "debugpySystemInfo"}})
	if err != nil || resp.GetResponse().Command != "debugpySystemInfo" {
		t.Fatalf("unknown command response: %v %v", resp, err)
	}
	_, err = c.Do(ctx(t), &godap.AttachRequest{Request: godap.Request{Command: "attach"}, Arguments: json.RawMessage(`{}`)})
	var re *ResponseError
	if !errors.As(err, &re) || re.Command != "attach" || re.Detail != "Server[pid=42] is already being debugged." {
		t.Fatalf("error = %#v", err)
	}
	if diff := cmp.Diff([]string{"debugpyWaitingForServer", "debugpySockets"}, c.SkippedEvents()); diff != "" {
		t.Errorf("skipped events (-want +got):\n%s", diff)
	}
}

func jsonNum(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestSequenceNumbersIncrease(t *testing.T) {
	c, a := newPair(t)
	got := make(chan []float64, 1)
	go func() {
		var seqs []float64
		for i := 0; i < 3; i++ {
			m := a.read()
			seqs = append(seqs, m["seq"].(float64))
			a.send(`{"seq":1,"type":"response","request_seq":` + jsonNum(m["seq"]) + `,"success":true,"command":"threads","body":{"threads":[]}}`)
		}
		got <- seqs
	}()
	for i := 0; i < 3; i++ {
		if _, err := c.Do(ctx(t), &godap.ThreadsRequest{Request: godap.Request{Command: "threads"}}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]float64{1, 2, 3}, <-got); diff != "" {
		t.Errorf("seq (-want +got):\n%s", diff)
	}
}

func TestClosedConnectionFailsWaiters(t *testing.T) {
	c, a := newPair(t)
	go func() {
		a.read()
		a.conn.Close()
	}()
	_, err := c.Do(ctx(t), &godap.ThreadsRequest{Request: godap.Request{Command: "threads"}})
	if !errors.Is(err, ErrClosed) || !errors.Is(err, io.EOF) {
		t.Fatalf("error = %v, want ErrClosed wrapping EOF", err)
	}
	if _, err := c.WaitEvent(ctx(t), "stopped"); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitEvent error = %v, want ErrClosed", err)
	}
}

func TestWaitEventHonoursContext(t *testing.T) {
	c, _ := newPair(t)
	cctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.WaitEvent(cctx, "stopped"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want deadline exceeded", err)
	}
}
