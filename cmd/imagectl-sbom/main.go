package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/cmd/imagectl-sbom/scan"
	"github.com/imagectl/imagectl/sbom"
)

// maxRequestBytes bounds the request read on standard input.
const maxRequestBytes = 16 << 20

const usage = `usage: imagectl-sbom scan       (a request, JSON, on standard input; the SBOM, JSON, on standard output)
       imagectl-sbom version    (the scanner's version)
`

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintln(stdout, scan.ToolVersion())
		return 0
	case "scan":
		if err := scanRequest(ctx, stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "imagectl-sbom: %v\n", err)
			return 1
		}
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "imagectl-sbom: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

// scanRequest reads one sbom.Request from stdin, scans its image and
// writes the sbom.Result to stdout. An empty stdin is no request: nothing
// is scanned.
func scanRequest(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	scan.Prepare()
	data, err := io.ReadAll(io.LimitReader(stdin, maxRequestBytes+1))
	if err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	if len(data) > maxRequestBytes {
		return fmt.Errorf("the request is larger than %d bytes", maxRequestBytes)
	}
	if len(data) == 0 {
		return nil
	}
	var req sbom.Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fmt.Errorf("the request: %w", err)
	}
	ref, err := loopbackDigest(req.Image)
	if err != nil {
		return err
	}
	img, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("reading %s: %w", ref, err)
	}
	res, err := scan.Scan(ctx, img, req.Options)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}

// loopbackDigest parses image, which must be a reference by digest to a
// registry on a loopback address: the scanner reads it over plain HTTP,
// which is only safe there.
func loopbackDigest(image string) (name.Digest, error) {
	if image == "" {
		return name.Digest{}, errors.New(`the request's "image" is empty: want REGISTRY/REPO@sha256:... on a loopback address`)
	}
	d, err := name.NewDigest(image, name.Insecure, name.StrictValidation)
	if err != nil {
		return name.Digest{}, fmt.Errorf("the request's image %q: %w (want REGISTRY/REPO@sha256:...)", image, err)
	}
	host, _, err := net.SplitHostPort(d.RegistryStr())
	if err != nil {
		host = d.RegistryStr()
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return name.Digest{}, fmt.Errorf("the request's image %q is not on a loopback address: the scanner reads images over plain HTTP from 127.0.0.1, ::1 or localhost only", image)
	}
	return d, nil
}
