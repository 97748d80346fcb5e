import { readFileSync } from 'node:fs';
import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../auth/auth.guard';

const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Parley API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="/openapi.json"></redoc><script src="/docs/redoc.standalone.js"></script></body>
</html>`;

/** The interactive API reference, rendered by Redoc served from its npm package (no CDN). */
@ApiExcludeController()
@Controller('docs')
@Public()
export class DocsController {
  private script: string | undefined;

  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  page(): string {
    return PAGE;
  }

  @Get('redoc.standalone.js')
  @Header('content-type', 'application/javascript; charset=utf-8')
  @Header('cache-control', 'public, max-age=86400')
  bundle(): string {
    this.script ??= readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
    return this.script;
  }
}
