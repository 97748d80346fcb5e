import { Permission } from '../auth/permissions';

export interface PlannedRoute {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  summary: string;
  permission: Permission | 'public';
  list?: boolean;
  idempotent?: boolean;
}

const r = (
  method: PlannedRoute['method'],
  path: string,
  permission: PlannedRoute['permission'],
  summary: string,
  extra: Partial<PlannedRoute> = {},
): PlannedRoute => ({ method, path, permission, summary, ...extra });

const ID = { idempotent: true };
const LIST = { list: true };

/**
 * Routes of the public interface whose resources arrive in later releases. They are routed, authenticated and
 * authorised like the others, published in OpenAPI with the permission they will need, and answer 501
 * `not_implemented` until then, so clients can discover the whole surface today.
 */
export const PLANNED_ROUTES: Record<string, PlannedRoute[]> = {
  Projects: [
    r('get', '/v1/projects', 'billing:read', 'List projects', LIST),
    r('post', '/v1/projects', 'billing:write', 'Create a project', ID),
    r('get', '/v1/projects/{id}', 'billing:read', 'Retrieve a project'),
    r('patch', '/v1/projects/{id}', 'billing:write', 'Update a project'),
    r('delete', '/v1/projects/{id}', 'billing:write', 'Delete a project'),
  ],
};
