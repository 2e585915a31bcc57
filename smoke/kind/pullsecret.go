package kind

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/regauth"
)

// PullSecretName names the imagePullSecret the harness creates for a
// private repository.
const PullSecretName = "imagectl-smoke-pull"

// dockerHubKey is the key kubelet (like docker) files Docker Hub
// credentials under.
const dockerHubKey = "https://index.docker.io/v1/"

// PullAccess says how the node can pull image: Pinned is image by digest
// (repo[:tag]@sha256:...), and Secret, when the repository cannot be read
// anonymously, is a kubernetes.io/dockerconfigjson Secret named
// PullSecretName with the docker config's credentials for that registry
// (DOCKER_CONFIG or ~/.docker/config.json, as docker login writes them).
type PullAccess struct {
	Pinned string
	Secret []byte // nil for a public repository
}

// ResolvePullAccess reads the image's digest (with credentials when
// needed) and decides whether the pod needs an imagePullSecret.
func ResolvePullAccess(ctx context.Context, image string, opts ...name.Option) (*PullAccess, error) {
	ref, err := name.ParseReference(image, opts...)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", image, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	pa := &PullAccess{}
	desc, err := remote.Head(ref, remote.WithContext(ctx), remote.WithAuth(authn.Anonymous), remote.WithTransport(regauth.Transport(nil)))
	if err != nil {
		var terr *transport.Error
		if !errors.As(err, &terr) || (terr.StatusCode != http.StatusUnauthorized && terr.StatusCode != http.StatusForbidden) {
			return nil, fmt.Errorf("reading %s from its registry: %w", image, err)
		}
		// Private: the node needs the same credentials as this machine.
		auth, err := regauth.Keychain().Resolve(ref.Context())
		if err != nil {
			return nil, fmt.Errorf("docker config credentials for %s: %w", ref.Context().RegistryStr(), err)
		}
		if desc, err = remote.Head(ref, remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(regauth.Transport(nil))); err != nil {
			return nil, fmt.Errorf("%s needs credentials and the docker config's for %s do not read it (docker login %s): %w",
				image, ref.Context().RegistryStr(), ref.Context().RegistryStr(), err)
		}
		if pa.Secret, err = pullSecret(ref.Context().Registry, auth); err != nil {
			return nil, err
		}
	}
	pa.Pinned = image
	if _, ok := ref.(name.Digest); !ok {
		pa.Pinned = image + "@" + desc.Digest.String()
	}
	return pa, nil
}

// pullSecret is the Secret manifest kubelet reads registry credentials from.
func pullSecret(reg name.Registry, auth authn.Authenticator) ([]byte, error) {
	cfg, err := authn.Authorization(context.Background(), auth)
	if err != nil {
		return nil, err
	}
	if cfg.Username == "" && cfg.Auth == "" {
		if cfg.IdentityToken != "" || cfg.RegistryToken != "" {
			return nil, fmt.Errorf("the docker config's credentials for %s are a token, which kubelet cannot use: log in with a user name and password or access token", reg.RegistryStr())
		}
		return nil, fmt.Errorf("no credentials for %s in the docker config (DOCKER_CONFIG or ~/.docker/config.json): docker login %s", reg.RegistryStr(), reg.RegistryStr())
	}
	entry := map[string]string{}
	if cfg.Username != "" {
		entry["username"], entry["password"] = cfg.Username, cfg.Password
		entry["auth"] = base64.StdEncoding.EncodeToString([]byte(cfg.Username + ":" + cfg.Password))
	} else {
		entry["auth"] = cfg.Auth
	}
	key := reg.RegistryStr()
	if key == name.DefaultRegistry {
		key = dockerHubKey
	}
	dockercfg, err := json.Marshal(map[string]any{"auths": map[string]any{key: entry}})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]any{"name": PullSecretName},
		"type":       "kubernetes.io/dockerconfigjson",
		"data":       map[string]string{".dockerconfigjson": base64.StdEncoding.EncodeToString(dockercfg)},
	}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
