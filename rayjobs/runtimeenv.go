package rayjobs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Upload is one local path PrepareRuntimeEnv replaced by a URI.
type Upload struct {
	Field string // working_dir or py_modules
	Path  string // as given
	URI   string
	// Uploaded is false when the cluster already had the package.
	Uploaded bool
	Size     int
	Warnings []string
}

// Prepared is a runtime_env ready to submit.
type Prepared struct {
	RuntimeEnv map[string]any
	Uploads    []Upload
}

// rayProtocols are the URI schemes Ray knows (runtime_env/protocol.py
// ProtocolsProvider.get_protocols); remoteProtocols are the ones it
// downloads from.
var (
	rayProtocols    = map[string]bool{"gcs": true, "conda": true, "pip": true, "uv": true, "https": true, "s3": true, "gs": true, "file": true}
	remoteProtocols = map[string]bool{"https": true, "s3": true, "gs": true, "file": true}
)

// pyScheme is the scheme Python's urllib.parse.urlparse finds in s ("" when
// none): letters, digits, "+", "-" and "." before the first ":", starting
// with a letter, lowercased.
func pyScheme(s string) string {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return ""
	}
	c := s[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return ""
	}
	for _, r := range s[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return ""
		}
	}
	return strings.ToLower(s[:i])
}

// PrepareRuntimeEnv returns a copy of env with its local paths replaced as
// JobSubmissionClient.submit_job replaces them before it submits
// (SubmissionClient._upload_working_dir_if_needed and
// _upload_py_modules_if_needed, runtime_env/working_dir.py and
// py_modules.py, then RuntimeEnv(**env)):
//
//   - working_dir: a URI Ray knows passes through (a remote one must end in
//     .zip); a local directory is packaged (Package, with env's excludes)
//     and uploaded unless the cluster has it, and becomes its gcs:// URI.
//     A local .zip file is refused: the SDK's path for it writes to the GCS
//     directly and works only inside a Ray driver;
//   - py_modules: each URI passes through (a remote one must end in .zip or
//     .whl); a local directory is packaged with itself at the top of the
//     zip; a local .whl is uploaded as it is, as gcs://<file name>; a local
//     .py file is refused, as the SDK fails on it (it takes it for a
//     directory);
//   - pip or uv given as a string (or pip.packages as a string) name a local
//     requirements file, whose lines become the package list; conda given
//     as a .yaml/.yml file name is read as YAML (runtime_env/validation.py);
//   - env_vars must map strings to strings.
//
// Relative paths are relative to the process's working directory, as in
// Ray. Everything else in env is passed on unchanged.
func (c *Client) PrepareRuntimeEnv(ctx context.Context, env map[string]any, opts ...PackageOption) (*Prepared, error) {
	out, err := copyEnv(env)
	if err != nil {
		return nil, err
	}
	p := &Prepared{RuntimeEnv: out}
	excludes, err := stringList(out, "excludes")
	if err != nil {
		return nil, err
	}
	if wd, ok := out["working_dir"]; ok && wd != nil {
		s, ok := wd.(string)
		if !ok {
			return nil, fmt.Errorf("runtime_env working_dir: want a string (a local path or a remote URI), got %T", wd)
		}
		if scheme := pyScheme(s); rayProtocols[scheme] {
			if remoteProtocols[scheme] && !strings.HasSuffix(s, ".zip") {
				return nil, fmt.Errorf("runtime_env working_dir %q: only .zip files are supported for remote URIs", s)
			}
		} else {
			st, err := os.Stat(s)
			switch {
			case err == nil && st.IsDir():
			case err == nil && strings.HasSuffix(s, ".zip"):
				return nil, fmt.Errorf("runtime_env working_dir %s: a local .zip file cannot be uploaded through the Jobs API (Ray's SDK cannot either); unzip it and give the directory", s)
			default:
				return nil, fmt.Errorf("runtime_env working_dir %s must be an existing directory", s)
			}
			up, err := c.uploadDir(ctx, "working_dir", s, excludes, opts...)
			if err != nil {
				return nil, err
			}
			out["working_dir"] = up.URI
			p.Uploads = append(p.Uploads, *up)
		}
	}
	if pm, ok := out["py_modules"]; ok && pm != nil {
		list, ok := pm.([]any)
		if !ok {
			return nil, fmt.Errorf("runtime_env py_modules: want a list of local paths or URIs, got %T", pm)
		}
		uris := make([]any, 0, len(list))
		for i, m := range list {
			s, ok := m.(string)
			if !ok {
				return nil, fmt.Errorf("runtime_env py_modules[%d]: want a string (a local path or a URI), got %T", i, m)
			}
			if scheme := pyScheme(s); rayProtocols[scheme] {
				if remoteProtocols[scheme] && !strings.HasSuffix(s, ".zip") && !strings.HasSuffix(s, ".whl") {
					return nil, fmt.Errorf("runtime_env py_modules[%d] %q: only .zip or .whl files are supported for remote URIs", i, s)
				}
				uris = append(uris, s)
				continue
			}
			st, err := os.Stat(s)
			switch {
			case err == nil && st.IsDir():
				up, err := c.uploadDir(ctx, "py_modules", s, excludes, append(opts, WithParentDir())...)
				if err != nil {
					return nil, err
				}
				uris = append(uris, up.URI)
				p.Uploads = append(p.Uploads, *up)
			case err == nil && filepath.Ext(s) == ".whl":
				up, err := c.uploadWheel(ctx, s)
				if err != nil {
					return nil, err
				}
				uris = append(uris, up.URI)
				p.Uploads = append(p.Uploads, *up)
			case err == nil && filepath.Ext(s) == ".py":
				return nil, fmt.Errorf("runtime_env py_modules[%d] %s: a single .py file cannot be uploaded through the Jobs API (Ray's SDK fails on it too); put it in a directory and give that", i, s)
			case err != nil:
				return nil, fmt.Errorf("runtime_env py_modules[%d] %s: %w", i, s, err)
			default:
				return nil, fmt.Errorf("runtime_env py_modules[%d]: must be a .py file, a directory, or a .whl file; got %s", i, s)
			}
		}
		out["py_modules"] = uris
	}
	for _, k := range []string{"pip", "uv"} {
		if err := requirementsFile(out, k); err != nil {
			return nil, err
		}
	}
	if cd, ok := out["conda"].(string); ok && (filepath.Ext(cd) == ".yaml" || filepath.Ext(cd) == ".yml") {
		b, err := os.ReadFile(cd)
		if err != nil {
			return nil, fmt.Errorf("runtime_env conda: can't find conda YAML file %s: %w", cd, err)
		}
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("runtime_env conda: failed to read conda file %s: %w", cd, err)
		}
		out["conda"], err = jsonRoundTrip(v)
		if err != nil {
			return nil, fmt.Errorf("runtime_env conda %s: %w", cd, err)
		}
	}
	if ev, ok := out["env_vars"]; ok && ev != nil {
		m, ok := ev.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("runtime_env env_vars: want a map of strings, got %T", ev)
		}
		for k, v := range m {
			if _, ok := v.(string); !ok {
				return nil, fmt.Errorf("runtime_env env_vars[%q]: want a string, got %T (%v)", k, v, v)
			}
		}
	}
	return p, nil
}

func (c *Client) uploadDir(ctx context.Context, field, dir string, excludes []string, opts ...PackageOption) (*Upload, error) {
	pkg, err := Package(ctx, dir, excludes, opts...)
	if err != nil {
		return nil, fmt.Errorf("runtime_env %s: %w", field, err)
	}
	up := &Upload{Field: field, Path: dir, URI: pkg.URI, Size: len(pkg.Zip), Warnings: pkg.Warnings}
	exists, err := c.PackageExists(ctx, pkg.URI)
	if err != nil {
		return nil, fmt.Errorf("runtime_env %s %s: %w", field, dir, err)
	}
	if !exists {
		if err := c.UploadPackage(ctx, pkg.URI, pkg.Zip); err != nil {
			return nil, fmt.Errorf("runtime_env %s %s: %w", field, dir, err)
		}
		up.Uploaded = true
	}
	return up, nil
}

// uploadWheel uploads a local wheel under gcs://<its file name>
// (packaging.py get_uri_for_package: a wheel's name is content-addressed
// enough).
func (c *Client) uploadWheel(ctx context.Context, file string) (*Upload, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("runtime_env py_modules %s: %w", file, err)
	}
	uri := "gcs://" + filepath.Base(file)
	up := &Upload{Field: "py_modules", Path: file, URI: uri, Size: len(data)}
	exists, err := c.PackageExists(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("runtime_env py_modules %s: %w", file, err)
	}
	if !exists {
		if err := c.UploadPackage(ctx, uri, data); err != nil {
			return nil, fmt.Errorf("runtime_env py_modules %s: %w", file, err)
		}
		up.Uploaded = true
	}
	return up, nil
}

// requirementsFile reads a local requirements file named by env[key] (a
// string) or env[key]["packages"] (pip only), as
// _handle_local_deps_requirement_file: the file's text, stripped, split
// at "\n".
func requirementsFile(env map[string]any, key string) error {
	var file string
	var set func([]any)
	switch v := env[key].(type) {
	case string:
		file = v
		check := "pip_check"
		if key == "uv" {
			check = "uv_check"
		}
		set = func(l []any) { env[key] = map[string]any{"packages": l, check: false} }
	case map[string]any:
		if s, ok := v["packages"].(string); ok && key == "pip" {
			file = s
			set = func(l []any) { v["packages"] = l }
		}
	}
	if set == nil {
		return nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("runtime_env %s: %s is not a valid file: %w", key, file, err)
	}
	var l []any
	for _, line := range strings.Split(pyStrip(string(b)), "\n") {
		l = append(l, line)
	}
	set(l)
	return nil
}

func stringList(env map[string]any, key string) ([]string, error) {
	v, ok := env[key]
	if !ok || v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("runtime_env %s: want a list of strings, got %T", key, v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("runtime_env %s[%d]: want a string, got %T", key, i, x)
		}
		out[i] = s
	}
	return out, nil
}

// copyEnv deep-copies env through JSON, so the caller's map is never
// changed and every value has the types encoding/json gives.
func copyEnv(env map[string]any) (map[string]any, error) {
	if env == nil {
		return map[string]any{}, nil
	}
	v, err := jsonRoundTrip(env)
	if err != nil {
		return nil, fmt.Errorf("runtime_env: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("runtime_env: want a map, got %T", v)
	}
	return m, nil
}

func jsonRoundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not JSON-serialisable: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
