import type { Type as Class } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';

/** `?limit=&cursor=` of a keyset-paged listing (see keysetPage). */
export interface PageQuery {
  limit?: number;
  cursor?: string;
}

export interface PageQueryOptions {
  defaultLimit: number;
  maxLimit: number;
  /** Longer cursors are refused by validation, before they are decoded. */
  cursorMaxLength: number;
  /** Shown as the limit's example in the OpenAPI document. */
  example?: number;
}

/**
 * The one page-query DTO of every listing, with the listing's own limits. A class per listing (not one
 * shared class) because validation and Swagger read the limits from decorators on the class.
 */
export function PageQueryDto(options: PageQueryOptions): Class<PageQuery> {
  const { defaultLimit, maxLimit, cursorMaxLength, example } = options;
  class PageQueryDto implements PageQuery {
    @ApiPropertyOptional({ ...(example === undefined ? {} : { example }), minimum: 1, maximum: maxLimit, default: defaultLimit })
    @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(maxLimit)
    limit?: number;

    @ApiPropertyOptional({ description: 'next_cursor of the previous page.' })
    @IsOptional() @IsString() @MaxLength(cursorMaxLength)
    cursor?: string;
  }
  return PageQueryDto;
}
