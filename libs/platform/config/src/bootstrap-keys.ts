export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

export interface BootstrapKey {
  account: string;
  role: Role;
  key: string;
}

export const API_KEY_PATTERN = /^vsk_[A-Za-z0-9_-]{16,128}$/;
const ACCOUNT_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Parses `account:role:key` triples; returns the problems instead of throwing so config validation lists all. */
export function parseBootstrapKeys(value: string): { keys: BootstrapKey[]; problems: string[] } {
  const keys: BootstrapKey[] = [];
  const problems: string[] = [];
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .forEach((entry, i) => {
      const [account, role, key, ...rest] = entry.split(':');
      const where = `entry ${i + 1}`;
      if (rest.length || key === undefined) return problems.push(`${where} must be account:role:key`);
      if (!ACCOUNT_PATTERN.test(account)) problems.push(`${where}: account must be 1-64 letters, digits, '_' or '-'`);
      if (!ROLES.includes(role as Role)) problems.push(`${where}: role must be one of ${ROLES.join(', ')}`);
      if (!API_KEY_PATTERN.test(key)) problems.push(`${where}: key must start with vsk_ and carry 16-128 [A-Za-z0-9_-]`);
      keys.push({ account, role: role as Role, key });
    });
  return { keys, problems };
}
