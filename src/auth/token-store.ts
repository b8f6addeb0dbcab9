/** Creating, listing and revoking tokens (contract §1 command-line tool, §6). */
import type { Database } from '../db/database.ts';
import { serviceKey } from '../db/keys.ts';
import { generateToken, tokenHash, type Scope } from './tokens.ts';

export interface TokenRecord {
  id: number;
  userId: number;
  scopes: Scope[];
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

interface TokenRow {
  id: number;
  user_id: number;
  scopes: Scope[];
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
}

function toRecord(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    userId: row.user_id,
    scopes: row.scopes,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/** Creates a token for `userId`; the returned `token` is the only copy of the secret. */
export async function createToken(
  db: Database,
  userId: number,
  scopes: readonly Scope[],
  ttlSeconds: number | null,
): Promise<{ token: string; record: TokenRecord }> {
  const token = generateToken(await serviceKey(db, 'token'));
  const row = await db.one('InsertToken', [userId, tokenHash(token), scopes, ttlSeconds]);
  return { token, record: toRecord(row) };
}

export async function listTokens(db: Database, userId: number): Promise<TokenRecord[]> {
  return (await db.many('ListTokensOfUser', [userId])).map(toRecord);
}

/** Revokes a token; `false` when there is no token with that id. */
export async function revokeToken(db: Database, tokenId: number): Promise<boolean> {
  return (await db.opt('RevokeToken', [tokenId])) !== undefined;
}
