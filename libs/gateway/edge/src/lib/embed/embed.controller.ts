import { applyDecorators, Controller, Get, Headers, Inject, Param, Res } from '@nestjs/common';
import { ApiExtraModels, ApiHeader, ApiParam, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { AppError } from '@parley/rpc';
import { ContractPath } from '../http/openapi';
import { ProblemDto } from '../http/openapi-decorators';
import { Operation } from '../http/operation';
import { EmbedBuild, EmbedFileName, matchesEtag } from './embed-build';

export const EMBED_BUILD = Symbol('EMBED_BUILD');

/** The current URLs follow the deployment's client: browsers check back after five minutes (a 304 when unchanged). */
export const CURRENT_CACHE = 'public, max-age=300';
/** A versioned URL never changes: its segment fingerprints the files. */
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';

const SCRIPT = 'application/javascript; charset=utf-8';

const problem = (status: number, description: string) =>
  ApiResponse({ status, description, content: { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemDto) } } } });

/** One way of serving the client: the route's documentation. */
function Script(summary: string, description: string, cache: string) {
  return applyDecorators(
    Operation({ summary, description, permission: 'public' }),
    ApiHeader({ name: 'If-None-Match', required: false, description: 'The ETag of a copy held: 304 while it is current.', schema: { type: 'string' } }),
    ApiResponse({
      status: 200,
      description: `The script. \`Cache-Control: ${cache}\`, a strong \`ETag\`, and \`Content-Location\` naming the versioned URL of these bytes.`,
      content: { 'application/javascript': { schema: { type: 'string' } } },
    }),
    ApiResponse({ status: 304, description: 'Not modified: the copy named by If-None-Match is current.' }),
    problem(503, '`service_unavailable`: the browser client was not built into this gateway.'),
  );
}

const CLASSIC = 'The browser client as a classic script, for a page without a bundler: `<script src="{base_url}/v1/embed/"></script>` sets the global `Parley` (`new Parley.ParleyCall({ url, token })`). See docs/browser-client.md.';
const MODULE = 'The browser client as an ES module: `import { ParleyCall } from "{base_url}/v1/embed/parley.mjs"`.';
const VERSIONED = 'A build of the browser client at a URL that never changes (its `{build}` segment is the version and a fingerprint of the files, as the current URLs name in `Content-Location`); a build other than the one this deployment serves is 404 `not_found`.';
const BUILD_PARAM = ApiParam({ name: 'build', required: true, description: 'The version and fingerprint, e.g. `1.0.0-3f9a1c2e4b`.', schema: { type: 'string' } });

/**
 * The browser client script (docs/browser-client.md), public and cacheable: the current build at short-lived URLs
 * with an ETag, and each build at an immutable URL of its own. Cross-origin pages may load it (http/cors.ts).
 */
@ApiTags('Calls')
@ApiExtraModels(ProblemDto)
@Controller('v1/embed')
export class EmbedController {
  constructor(@Inject(EMBED_BUILD) private readonly embed: EmbedBuild | null) {}

  @Get()
  @ContractPath('/v1/embed/')
  @Script('The browser client script, for use without a bundler', CLASSIC, CURRENT_CACHE)
  current(@Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply) {
    return this.serve(reply, 'parley.js', CURRENT_CACHE, ifNoneMatch);
  }

  @Get('parley.js')
  @Script('The browser client script (the same as /v1/embed/)', CLASSIC, CURRENT_CACHE)
  currentClassic(@Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply) {
    return this.serve(reply, 'parley.js', CURRENT_CACHE, ifNoneMatch);
  }

  @Get('parley.mjs')
  @Script('The browser client as an ES module', MODULE, CURRENT_CACHE)
  currentModule(@Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply) {
    return this.serve(reply, 'parley.mjs', CURRENT_CACHE, ifNoneMatch);
  }

  @Get(':build/parley.js')
  @Script('A build of the browser client script, immutable', `${VERSIONED} ${CLASSIC}`, IMMUTABLE_CACHE)
  @BUILD_PARAM
  @problem(404, '`not_found`: no such build here.')
  versionedClassic(@Param('build') build: string, @Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply) {
    return this.serve(reply, 'parley.js', IMMUTABLE_CACHE, ifNoneMatch, build);
  }

  @Get(':build/parley.mjs')
  @Script('A build of the browser client module, immutable', `${VERSIONED} ${MODULE}`, IMMUTABLE_CACHE)
  @BUILD_PARAM
  @problem(404, '`not_found`: no such build here.')
  versionedModule(@Param('build') build: string, @Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply) {
    return this.serve(reply, 'parley.mjs', IMMUTABLE_CACHE, ifNoneMatch, build);
  }

  private serve(reply: FastifyReply, name: EmbedFileName, cache: string, ifNoneMatch: string | undefined, build?: string) {
    const embed = this.embed;
    if (!embed) throw new AppError('service_unavailable', 'The browser client was not built into this gateway: build it with `npx nx run gateway:build`.');
    if (build !== undefined && build !== embed.build) {
      throw new AppError('not_found', `No browser client build ${JSON.stringify(build)} here; this deployment serves ${embed.build} (or the current one at /v1/embed/).`);
    }
    const file = embed.files[name];
    reply
      .header('cache-control', cache)
      .header('etag', file.etag)
      .header('content-location', `/v1/embed/${embed.build}/${name}`)
      .header('x-content-type-options', 'nosniff')
      // A page isolated with Cross-Origin-Embedder-Policy may still load it from another origin.
      .header('cross-origin-resource-policy', 'cross-origin');
    if (matchesEtag(ifNoneMatch, file.etag)) return reply.status(304).send();
    return reply.status(200).header('content-type', SCRIPT).send(file.body);
  }
}
