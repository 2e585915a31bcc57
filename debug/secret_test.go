package debug

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// TestPasswordSecretWaitsForOneBeingDeleted: a password Secret that exists
// is kept; one being deleted (an earlier session's --cleanup, its
// foregroundDeletion finalizer not yet removed) is waited for and then
// created again, not kept to vanish under the sidecar.
func TestPasswordSecretWaitsForOneBeingDeleted(t *testing.T) {
	secret := func(deleting bool) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "code-server-password", Namespace: "ns"},
			Data:       map[string][]byte{"password": []byte("old")},
		}
		if deleting {
			now := metav1.Now()
			s.DeletionTimestamp, s.Finalizers = &now, []string{"foregroundDeletion"}
		}
		return s
	}
	for _, tc := range []struct {
		name       string
		deleting   bool
		wantCreate bool
	}{
		{name: "exists", deleting: false, wantCreate: false},
		{name: "being deleted", deleting: true, wantCreate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := kubefake.NewSimpleClientset(secret(tc.deleting))
			var waited []Event
			s := &session{
				o: Options{File: "rayjob.yaml", SecretName: "code-server-password", SecretKey: "password", Timeout: time.Minute},
				c: &Cluster{Namespace: "ns", Core: clientsetCore{cs}},
				r: ReporterFunc(func(e Event) {
					if e.Kind == KindWaiting {
						waited = append(waited, e)
					}
				}),
			}
			const goneAfter = 1500 * time.Millisecond
			if tc.deleting {
				go func() {
					time.Sleep(goneAfter)
					cs.CoreV1().Secrets("ns").Delete(t.Context(), "code-server-password", metav1.DeleteOptions{})
				}()
			}
			start := time.Now()
			u, err := s.passwordSecret(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := u != nil; got != tc.wantCreate {
				t.Fatalf("passwordSecret returned a Secret to create: %v, want %v", got, tc.wantCreate)
			}
			if !tc.deleting {
				if len(waited) != 0 {
					t.Errorf("waiting events %+v for a Secret that is not being deleted", waited)
				}
				return
			}
			if took := time.Since(start); took < goneAfter {
				t.Errorf("returned after %s, before the Secret was gone (%s)", took, goneAfter)
			}
			if len(waited) != 1 || waited[0].Object != "Secret/code-server-password" {
				t.Errorf("waiting events %+v: want one for Secret/code-server-password", waited)
			}
			if u.GetName() != "code-server-password" || u.GetNamespace() != "ns" {
				t.Errorf("Secret to create %s/%s, want ns/code-server-password", u.GetNamespace(), u.GetName())
			}
		})
	}
}
