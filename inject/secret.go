package inject

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Secret is the Secret holding the code-server password, one YAML
// document of its own: the sidecar reads PASSWORD from it, and it never
// goes into the stream of the user's documents (kubectl ray job submit -f
// reads only the first document of its file).
type Secret struct {
	Doc       []byte // the YAML document
	Name      string
	Namespace string // "" when the Ray documents set none
	// Kept reports that the password is the one the existing Secret held.
	Kept bool
}

// passwordBytes is how many random bytes a password holds (32 characters
// of URL-safe base64).
const passwordBytes = 24

// Namespace is the one namespace of the changed Ray documents ("" when
// they set none); an error when they are in several, since one Secret
// serves one namespace.
func (r *Result) Namespace() (string, error) {
	switch len(r.Namespaces) {
	case 0:
		return "", nil
	case 1:
		return r.Namespaces[0], nil
	}
	return "", fmt.Errorf("the Ray documents are in the namespaces %q, and one password Secret serves one namespace: inject the documents of each namespace apart, each with its own Secret file", r.Namespaces)
}

// PasswordSecret is the password Secret (WithPasswordSecret's name and
// key) for namespace. existing is what the Secret's file holds now (nil or
// empty when there is none), named file in errors: when it is that Secret
// with a password, the password is kept unless WithRotatePassword; when it
// holds anything else, PasswordSecret refuses to replace it.
func PasswordSecret(file string, existing []byte, namespace string, opts ...Option) (*Secret, error) {
	c := newConfig(opts)
	if err := c.validate(); err != nil {
		return nil, err
	}
	pw, err := c.existingPassword(file, existing)
	if err != nil {
		return nil, err
	}
	s := &Secret{Name: c.secretName, Namespace: namespace, Kept: pw != "" && !c.rotate}
	if !s.Kept {
		b := make([]byte, passwordBytes)
		if _, err := io.ReadFull(c.random, b); err != nil {
			return nil, fmt.Errorf("generating a password: %w", err)
		}
		pw = base64.RawURLEncoding.EncodeToString(b)
	}
	meta := mapOf(pair("name", c.secretName))
	if namespace != "" {
		meta.kv = append(meta.kv, pair("namespace", namespace))
	}
	doc := mapOf(
		pair("apiVersion", "v1"),
		pair("kind", "Secret"),
		pair("metadata", meta),
		pair("type", "Opaque"),
		pair("stringData", mapOf(pair(c.secretKey, pw))),
	)
	nsFlag := ""
	if namespace != "" {
		nsFlag = " -n " + namespace
	}
	lines := []string{
		"# The code-server password of the debugger sidecar (imagectl inject).",
		"# Apply it server-side, which keeps no copy of the data in an annotation:",
		"#   kubectl apply --server-side -f " + file,
		"# Read it with:",
		fmt.Sprintf("#   kubectl get secret %s%s -o jsonpath='{.data.%s}' | base64 -d", c.secretName, nsFlag, c.secretKey),
	}
	lines = append(lines, style{step: 2, compact: true}.emitMap(0, doc)...)
	s.Doc = []byte(strings.Join(lines, "\n") + "\n")
	return s, nil
}

// existingPassword is the password the Secret in data holds ("" when data
// is empty or the Secret has no such key).
func (c *config) existingPassword(file string, data []byte) (string, error) {
	chunks := splitDocuments(data)
	var docs []*yaml.Node
	for i, chunk := range chunks {
		root, err := parseDoc(chunk)
		if err != nil {
			return "", fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		if root != nil {
			docs = append(docs, root)
		}
	}
	if len(docs) == 0 {
		return "", nil
	}
	root := docs[0]
	if len(docs) > 1 || scalarAt(root, "apiVersion") != "v1" || scalarAt(root, "kind") != "Secret" || scalarAt(root, "metadata", "name") != c.secretName {
		return "", fmt.Errorf("%s holds %s, not only the v1 Secret %s: refusing to replace it; pick another file for the password Secret",
			file, describeDocs(docs), c.secretName)
	}
	if pw := scalarAt(root, "stringData", c.secretKey); pw != "" {
		return pw, nil
	}
	if enc := scalarAt(root, "data", c.secretKey); enc != "" {
		pw, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return "", fmt.Errorf("%s: data.%s of Secret %s: expected base64: %w", file, c.secretKey, c.secretName, err)
		}
		return string(pw), nil
	}
	return "", nil
}

// describeDocs names the documents of a file for an error.
func describeDocs(docs []*yaml.Node) string {
	var names []string
	for _, d := range docs {
		n := strings.TrimSpace(scalarAt(d, "apiVersion") + " " + scalarAt(d, "kind") + " " + scalarAt(d, "metadata", "name"))
		if n == "" {
			n = "a document that is no Kubernetes object"
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}
