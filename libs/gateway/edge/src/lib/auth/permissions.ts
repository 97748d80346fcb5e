import { SetMetadata } from '@nestjs/common';
import { Role } from '@parley/config';

/** The permissions of the public interface. */
export const PERMISSIONS = [
  'calls:write',
  'calls:read',
  'agents:read',
  'agents:write',
  'agents:create',
  'knowledge:read',
  'knowledge:write',
  'analytics:read',
  'keys:read',
  'keys:write',
  'billing:read',
  'billing:write',
  'tts:write',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/**
 * Which role holds what. `owner` holds everything. `admin` runs the deployment but cannot change billing.
 * `member` edits and runs agents, calls and knowledge but cannot create or delete agents, manage API keys, or
 * see billing.
 */
export const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  owner: new Set(PERMISSIONS),
  admin: new Set(PERMISSIONS.filter((p) => p !== 'billing:write')),
  member: new Set<Permission>([
    'calls:write',
    'calls:read',
    'agents:read',
    'agents:write',
    'knowledge:read',
    'knowledge:write',
    'analytics:read',
    'tts:write',
  ]),
};

/** Roles ordered by power: a key may only mint keys of its own role or below. */
export const ROLE_RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 };

export const PERMISSION_KEY = 'parley:permission';

/** The permission a route needs; enforced by PermissionGuard and published per operation in OpenAPI. */
export const RequirePermission = (permission: Permission) => SetMetadata(PERMISSION_KEY, permission);
