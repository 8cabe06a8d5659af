import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

/** The yardstick: a bare NestJS/Express route on the same machine, measured in the same run. */
@Controller()
class BareController {
  @Get('bare')
  bare(): { ok: true } {
    return { ok: true };
  }
}

@Module({ controllers: [BareController] })
class BareModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(BareModule, { logger: false });
  await app.listen(Number(process.env.PORT ?? 3999), '127.0.0.1');
  console.log('bare app listening on');
}

void main();
