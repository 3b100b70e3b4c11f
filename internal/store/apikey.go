package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
)

// APIKeys stores an org's API keys, each in its own partition
// (apiKeyKey), listed in GSI1 under ORG#<orgId>. The org item counts them
// (apiKeyCount), so an org holds at most apikey.MaxPerOrg. The item keeps
// the SHA-256 of the key's token, never the token.
type APIKeys struct{ *DB }

var _ apikey.Storer = (*APIKeys)(nil)

var (
	errAPIKeyNotFound = errs.E(errs.NotFound, "api_key_not_found", "API key not found")
	errAPIKeyLimit    = errs.E(errs.Conflict, "api_key_limit", "the organization has %d API keys already", apikey.MaxPerOrg)
)

type apiKeyItem struct {
	PK         string    `dynamo:"pk,hash"`
	SK         string    `dynamo:"sk,range"`
	Type       string    `dynamo:"type"`
	GSI1PK     string    `dynamo:"gsi1pk"` // ORG#<orgId>
	GSI1SK     string    `dynamo:"gsi1sk"` // APIKEY#<keyId>
	OrgID      string    `dynamo:"orgId"`
	ID         string    `dynamo:"keyId"`
	Name       string    `dynamo:"name"`
	Role       string    `dynamo:"role"` // what the actor fence reads, as on an OrgUser edge
	Hash       string    `dynamo:"hash"` // hex SHA-256 of the token
	CreatedAt  time.Time `dynamo:"createdAt"`
	CreatedBy  string    `dynamo:"createdBy"`
	ExpiresAt  time.Time `dynamo:"expiresAt,omitempty"`
	LastUsedAt time.Time `dynamo:"lastUsedAt,omitempty"`
}

func toAPIKeyItem(k apikey.Key) apiKeyItem {
	kk := apiKeyKey(k.OrgID, k.ID)
	return apiKeyItem{PK: kk.PK, SK: kk.SK, Type: typeAPIKey, GSI1PK: orgPK(k.OrgID), GSI1SK: apiKeySK(k.ID), OrgID: k.OrgID, ID: k.ID,
		Name: k.Name, Role: string(k.Role), Hash: hex.EncodeToString(k.Hash[:]), CreatedAt: k.CreatedAt, CreatedBy: k.CreatedBy,
		ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt}
}

func fromAPIKeyItem(it apiKeyItem) apikey.Key {
	k := apikey.Key{OrgID: it.OrgID, ID: it.ID, Name: it.Name, Role: authz.Role(it.Role), CreatedAt: it.CreatedAt,
		CreatedBy: it.CreatedBy, ExpiresAt: it.ExpiresAt, LastUsedAt: it.LastUsedAt}
	hex.Decode(k.Hash[:], []byte(it.Hash)) // a bad hash matches no token
	return k
}

func checkAPIKeyIDs(orgID, keyID string) error {
	return checkIDs(ids.Resource("orgId", orgID), ids.Resource("keyId", keyID))
}

// CreateApiKey writes the key and counts it on the org item, in one
// transaction with its audit event (and the minter's actor fence).
func (s *APIKeys) CreateApiKey(ctx context.Context, k apikey.Key, ev audit.Event) error {
	if err := checkAPIKeyIDs(k.OrgID, k.ID); err != nil {
		return err
	}
	ok := orgKey(k.OrgID)
	t := s.newTx().
		put(apiKeyKey(k.OrgID, k.ID), s.table.Put(toAPIKeyItem(k)).If(notExists),
			failWith(errs.E(errs.Conflict, "api_key_exists", "API key ID already taken"))).
		update(ok, s.table.Update(attrPK, ok.PK).Range(attrSK, ok.SK).Add("apiKeyCount", 1).
			If(liveItem+" AND (attribute_not_exists(apiKeyCount) OR apiKeyCount < ?)", apikey.MaxPerOrg),
			func(old map[string]types.AttributeValue) error {
				if gone(old) {
					return errOrgNotFound
				}
				return errAPIKeyLimit
			})
	return s.audited(ev, t).run(ctx, "create API key")
}

// GetApiKey reads one key with a consistent GetItem.
func (s *APIKeys) GetApiKey(ctx context.Context, orgID, keyID string) (apikey.Key, error) {
	if err := checkAPIKeyIDs(orgID, keyID); err != nil {
		return apikey.Key{}, err
	}
	it, err := getItem[apiKeyItem](ctx, s.DB, apiKeyKey(orgID, keyID), true, errAPIKeyNotFound, "get API key")
	return fromAPIKeyItem(it), err
}

// ListApiKeys pages through GSI1 ORG#<orgId>, begins_with APIKEY#.
func (s *APIKeys) ListApiKeys(ctx context.Context, orgID string, p page.Request) (page.Result[apikey.Key], error) {
	if err := checkIDs(ids.Resource("orgId", orgID)); err != nil {
		return page.Result[apikey.Key]{}, err
	}
	r, err := list(ctx, s.DB, listing{index: gsi1, partition: orgPK(orgID), prefix: prefixAPIKey}, p, fromAPIKeyItem)
	if err != nil {
		return r, fmt.Errorf("list API keys: %w", err)
	}
	return r, nil
}

// RevokeApiKey deletes the key and uncounts it, in one transaction with its
// audit event.
func (s *APIKeys) RevokeApiKey(ctx context.Context, orgID, keyID string, ev audit.Event) error {
	if err := checkAPIKeyIDs(orgID, keyID); err != nil {
		return err
	}
	k, ok := apiKeyKey(orgID, keyID), orgKey(orgID)
	t := s.newTx().
		delete(k, s.table.Delete(attrPK, k.PK).Range(attrSK, k.SK).If(exists), failWith(errAPIKeyNotFound)).
		update(ok, s.table.Update(attrPK, ok.PK).Range(attrSK, ok.SK).Add("apiKeyCount", -1).If(liveItem), failWith(errOrgNotFound))
	return s.audited(ev, t).run(ctx, "revoke API key")
}

// TouchApiKey records that the key was used at: one conditional write that
// only a use later than apikey.TouchEvery after the last recorded one
// makes, so replicas that saw the same use write it once.
func (s *APIKeys) TouchApiKey(ctx context.Context, orgID, keyID string, at time.Time) error {
	if err := checkAPIKeyIDs(orgID, keyID); err != nil {
		return err
	}
	k := apiKeyKey(orgID, keyID)
	at = at.UTC().Truncate(time.Second) // whole seconds: the stored times compare as strings
	err := s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Set("lastUsedAt", at).
		If("attribute_exists(pk) AND (attribute_not_exists(lastUsedAt) OR lastUsedAt < ?)", at.Add(-apikey.TouchEvery)).Run(ctx)
	if failed, _ := condFailed(err); failed {
		return nil // revoked, or touched by another replica meanwhile
	}
	return translate(err)
}

// serverKeyItem is the server key of the API keys' MACs (serverKeyKey).
type serverKeyItem struct {
	PK     string `dynamo:"pk,hash"`
	SK     string `dynamo:"sk,range"`
	Type   string `dynamo:"type"`
	Secret []byte `dynamo:"secret"`
}

var errNoServerKey = errors.New("no server key")

// ServerKey reads the server key (consistently); when there is none, it
// writes fresh if there is still none (a conditional put), or reads the
// key of the replica that won that race.
func (s *APIKeys) ServerKey(ctx context.Context, fresh []byte) ([]byte, error) {
	it, err := getItem[serverKeyItem](ctx, s.DB, serverKeyKey, true, errNoServerKey, "get server key")
	if !errors.Is(err, errNoServerKey) {
		return it.Secret, err
	}
	k := serverKeyKey
	err = s.table.Put(serverKeyItem{PK: k.PK, SK: k.SK, Type: typeServerKey, Secret: fresh}).If(notExists).Run(ctx)
	if failed, _ := condFailed(err); failed {
		it, err = getItem[serverKeyItem](ctx, s.DB, k, true, errNoServerKey, "get server key")
		return it.Secret, err
	}
	if err != nil {
		return nil, fmt.Errorf("put server key: %w", translate(err))
	}
	return fresh, nil
}
