import { SetMetadata } from '@nestjs/common';

/** The objects a path parameter can name whose project a scoped key is checked against. */
export type ScopedObject = 'agent' | 'call' | 'webhook endpoint' | 'project';

/**
 * How a route reaches a project-scoped API key (docs/projects.md, "API keys scoped to a project"). A route that
 * declares none is account-wide and refused to scoped keys (403, ProjectScopeGuard), so a route added later is closed until it says how
 * it is scoped.
 * - `list`: a list (or aggregate) filtered by `?project_id=`: set to the key's project when absent, 403 when it names
 *   another.
 * - `{ param, object }`: acts on the object the path parameter names: 404 (as across accounts) when it is not in the
 *   key's project.
 * - `body_project`: creates in the project `project_id` of the body names: set to the key's project when absent, 403
 *   when it names another.
 * - `body_agent`: acts through the agent `agent_id` of the body names (a call to it): 404 for the agent when it is
 *   not in the key's project; 403 without one (what the route then does is account-wide).
 * - `own_project`: the handler itself answers with the key's project alone (GET /v1/projects).
 */
export type ProjectScope = 'list' | 'body_project' | 'body_agent' | 'own_project' | { param: string; object: ScopedObject };

export const PROJECT_SCOPE_KEY = 'parley:project-scope';
export const ProjectScoped = (scope: ProjectScope) => SetMetadata(PROJECT_SCOPE_KEY, scope);

/** What OpenAPI says of a route for scoped keys (`x-project-scope` and a sentence of its description). */
export function describeScope(scope: ProjectScope | undefined): { extension: 'project' | 'account'; sentence: string } {
  if (!scope) return { extension: 'account', sentence: 'Account-wide: refused (403 `permission_denied`) to an API key scoped to a project.' };
  const sentence =
    scope === 'list'
      ? 'A key scoped to a project sees only its project (`project_id` defaults to it; another project is 403 `permission_denied`).'
      : scope === 'body_project'
        ? 'A key scoped to a project creates in its project (`project_id` defaults to it; another project is 403 `permission_denied`).'
        : scope === 'body_agent'
          ? 'A key scoped to a project reaches only its project’s agents (another project’s agent is 404).'
          : scope === 'own_project'
            ? 'A key scoped to a project sees only its own project.'
            : `A key scoped to a project reaches only its project’s ${scope.object}s (another project’s is 404, as across accounts).`;
  return { extension: 'project', sentence };
}
