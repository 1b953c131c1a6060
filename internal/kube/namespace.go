package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodSecurityEnforceKey is the Pod Security Admission label that sets a
// namespace's enforced level; cnibench's namespaces are "privileged"
// because the capture and helper pods are.
const PodSecurityEnforceKey = "pod-security.kubernetes.io/enforce"

// TokenKey is the key of the token in the secret CreateTokenSecret makes.
const TokenKey = "token"

// EnsureNamespace creates namespace name for run runID (labelled
// ManagedByKey, RunKey and PodSecurityEnforceKey=privileged) unless it
// exists; an existing namespace is used as it is. created tells whether it
// was created, i.e. whether the run should delete it.
func EnsureNamespace(ctx context.Context, cs kubernetes.Interface, name, runID string) (created bool, err error) {
	_, err = cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		logger(ctx).Debug("namespace exists", "namespace", name)
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("get namespace %s: %w", name, err)
	}
	l := runLabels(runID)
	l[PodSecurityEnforceKey] = "privileged"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) { // created meanwhile by someone else
			return false, nil
		}
		return false, fmt.Errorf("create namespace %s: %w", name, err)
	}
	logger(ctx).Info("namespace created", "namespace", name)
	return true, nil
}

// CreateTokenSecret stores token (the shared secret of the cnibench server
// and client) in a new secret of namespace ns, under key TokenKey, and
// returns the secret's name.
func CreateTokenSecret(ctx context.Context, cs kubernetes.Interface, ns, runID, token string) (secretName string, err error) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cnibench-token-" + runID, Namespace: ns, Labels: runLabels(runID)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{TokenKey: []byte(token)},
	}
	got, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create secret %s/%s: %w", ns, s.Name, err)
	}
	return got.Name, nil
}
