import { Module } from '@nestjs/common';
import { NumberErasures } from './number-erasures';

/** The erasure tombstones (docs/privacy.md, "Erasure"): written by the erasure, read by every writer of a number, expired by retention. */
@Module({ providers: [NumberErasures], exports: [NumberErasures] })
export class NumberErasuresModule {}
