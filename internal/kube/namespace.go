package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/kube/preflight"
)

// TokenKey is the key of the token in the secret CreateTokenSecret makes.
const TokenKey = "token"

// RunNamespace is the namespace EnsureNamespace creates for run runID:
// labelled ManagedByKey, RunKey and preflight.PodSecurityEnforceKey
// privileged, because the capture and helper pods are (for preflight.Check
// to dry-run before it is created).
func RunNamespace(name, runID string) *corev1.Namespace {
	l := runLabels(runID)
	l[preflight.PodSecurityEnforceKey] = "privileged"
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// NamespaceExists tells whether namespace name exists (the get retried as
// every call is).
func NamespaceExists(ctx context.Context, cs kubernetes.Interface, name string) (bool, error) {
	err := Call(ctx, "get namespace "+name, func(ctx context.Context) error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}

// EnsureNamespace creates namespace name for run runID (RunNamespace)
// unless it exists; an existing namespace is used as it is. created tells
// whether it was created, i.e. whether the run should delete it (also when
// an earlier attempt of a retried create made it: it carries the run's
// labels).
func EnsureNamespace(ctx context.Context, cs kubernetes.Interface, name, runID string) (created bool, err error) {
	exists, err := NamespaceExists(ctx, cs, name)
	switch {
	case err != nil:
		return false, err
	case exists:
		Logger(ctx).Debug("namespace exists", "namespace", name)
		return false, nil
	}
	return CreateNamespace(ctx, cs, name, runID)
}

// CreateNamespace creates namespace name for run runID (RunNamespace),
// for a caller that already knows it does not exist (EnsureNamespace
// asks first). created is as EnsureNamespace's: false if someone else
// created it meanwhile.
func CreateNamespace(ctx context.Context, cs kubernetes.Interface, name, runID string) (created bool, err error) {
	nss := cs.CoreV1().Namespaces()
	get := func(ctx context.Context) (*corev1.Namespace, error) { return nss.Get(ctx, name, metav1.GetOptions{}) }
	ns := RunNamespace(name, runID)
	_, err = CreateOwn(ctx, "create namespace "+name, ns,
		func(ctx context.Context) (*corev1.Namespace, error) {
			return nss.Create(ctx, ns, metav1.CreateOptions{})
		}, get)
	if apierrors.IsAlreadyExists(err) { // created meanwhile by someone else
		return false, nil
	}
	if err != nil {
		return false, err
	}
	Logger(ctx).Info("namespace created", "namespace", name)
	return true, nil
}

// CreateTokenSecret stores token (the shared secret of the cnibench server
// and client) in a new secret of namespace ns, under key TokenKey, and
// returns the secret's name.
func CreateTokenSecret(ctx context.Context, cs kubernetes.Interface, ns, runID, token string) (secretName string, err error) {
	s := TokenSecret(ns, runID, token)
	secrets := cs.CoreV1().Secrets(ns)
	got, err := CreateOwn(ctx, "create secret "+ns+"/"+s.Name, s,
		func(ctx context.Context) (*corev1.Secret, error) {
			return secrets.Create(ctx, s, metav1.CreateOptions{})
		},
		func(ctx context.Context) (*corev1.Secret, error) {
			return secrets.Get(ctx, s.Name, metav1.GetOptions{})
		})
	if err != nil {
		return "", err
	}
	return got.Name, nil
}

// TokenSecret is the secret CreateTokenSecret creates (for preflight.Check to
// dry-run before it is created).
func TokenSecret(ns, runID, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cnibench-token-" + runID, Namespace: ns, Labels: runLabels(runID)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{TokenKey: []byte(token)},
	}
}
