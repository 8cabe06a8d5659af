import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ERROR_CODES } from './errors';

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Phone Filter API')
    .setDescription(
      'One synchronous call tells whether a phone number is well-formed and live, what line it is and whether ' +
        'it was ported, billed in credits. Authenticate with `Authorization: Bearer <API_KEY>`. Every error has ' +
        'the body `{ "error": { "code", "message" } }`.',
    )
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Your API key (pf_live_...)' }, 'api-key')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'The ADMIN_TOKEN of the deployment' }, 'admin-token')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  document.components ??= {};
  document.components.schemas = {
    ...document.components.schemas,
    Error: {
      type: 'object',
      required: ['error'],
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: { type: 'string', enum: [...ERROR_CODES] },
            message: { type: 'string', example: 'phone must be in E.164 format, e.g. +14155552671' },
          },
        },
      },
    },
  };
  return document;
}

export function setupSwagger(app: INestApplication): void {
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), {
    jsonDocumentUrl: 'docs-json',
    swaggerOptions: { persistAuthorization: true },
  });
}
