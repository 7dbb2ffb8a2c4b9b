// Types for rlstore-ratelimit.

/** rate-limit-redis's convention: send one command, resolve its reply. */
export type SendCommandFn = (command: string, ...args: string[]) => Promise<unknown>;

/** An ioredis client (has `call`) or a node-redis 4/5 client (has `sendCommand`). */
export type RedisLikeClient = { call: (...args: any[]) => Promise<unknown> } | { sendCommand: (args: string[]) => Promise<unknown> };

export interface RlstoreStoreOptions {
  client?: RedisLikeClient;
  sendCommand?: SendCommandFn;
  /** Put before every key; default 'rl:'. */
  prefix?: string;
  /** 'slide' (default: a sliding window, RL.LOG or RL.SLIDE), 'fixed' (from the first hit: RL.FIXED ANCHOR FIRST), 'log' or 'token'. */
  algorithm?: 'slide' | 'fixed' | 'log' | 'token';
  /** Milliseconds to wait for a decision (default 250; 0: none); then express-rate-limit's passOnStoreError decides. */
  timeout?: number;
  /** Ignored (the limit is express-rate-limit's); accepted for configurations written for 0.1. */
  limit?: number;
}

export interface ClientRateLimitInfo {
  totalHits: number;
  resetTime: Date | undefined;
}

/** An express-rate-limit 8 Store backed by rlstore. */
export class RlstoreStore {
  constructor(options: RlstoreStoreOptions);
  prefix: string;
  localKeys: false;
  init(options: { windowMs: number; limit: unknown }): void;
  get(key: string): Promise<ClientRateLimitInfo | undefined>;
  increment(key: string): Promise<ClientRateLimitInfo>;
  decrement(key: string): Promise<void>;
  resetKey(key: string): Promise<void>;
  /** Rejects if rlstore did not answer the PING sent when the store was made; err.code 'RLSTORE_AUTH': wrong or missing password. */
  verify(): Promise<void>;
}

export class RateLimiterRes {
  constructor(remainingPoints?: number, msBeforeNext?: number, consumedPoints?: number, isFirstInDuration?: boolean);
  remainingPoints: number;
  msBeforeNext: number;
  consumedPoints: number;
  isFirstInDuration: boolean;
}

export interface RateLimiterRlstoreOptions {
  storeClient?: RedisLikeClient;
  sendCommand?: SendCommandFn;
  /** Default 4; 0 or less rejects every consume. */
  points?: number;
  /** Seconds (ms precision); 0: never expires; default 1. */
  duration?: number;
  /** Default 'rlflx'. */
  keyPrefix?: string;
  /** Seconds to block a key after it goes over; default 0. */
  blockDuration?: number;
  /** rate-limiter-flexible's own options, handled by its RateLimiterStoreAbstract. */
  blockOnConsumed?: number;
  execEvenly?: boolean;
  execEvenlyMinDelayMs?: number;
  inMemoryBlockOnConsumed?: number;
  inMemoryBlockDuration?: number;
  insuranceLimiter?: unknown;
  /** 'slide' (default: a sliding window), 'fixed' (RateLimiterRedis's window from the first consume: RL.FIXED ANCHOR FIRST) or 'token' (RL.TOKEN); reward refunds with each (RL.REFUND; CL.THROTTLE for 'token'). */
  algorithm?: 'slide' | 'fixed' | 'token';
  /** Reject with an Error while the client says it is not connected (ioredis status, node-redis isReady). */
  rejectIfRedisNotReady?: boolean;
  /** Milliseconds to wait for each command (default 250; 0: none); then the call rejects with an Error. */
  timeout?: number;
}

export interface RateLimiterOptions {
  /** Seconds this call's window lasts instead of duration (0: never expires). */
  customDuration?: number;
}

/** rate-limiter-flexible's interface over rlstore (a RateLimiterStoreAbstract, as RateLimiterRedis is). */
export class RateLimiterRlstore {
  constructor(options: RateLimiterRlstoreOptions);
  points: number;
  duration: number;
  keyPrefix: string;
  blockDuration: number;
  getKey(key: string | number): string;
  consume(key: string | number, pointsToConsume?: number | string, options?: RateLimiterOptions): Promise<RateLimiterRes>;
  get(key: string | number, options?: RateLimiterOptions): Promise<RateLimiterRes | null>;
  set(key: string | number, points: number, secDuration?: number, options?: RateLimiterOptions): Promise<RateLimiterRes>;
  penalty(key: string | number, points?: number, options?: RateLimiterOptions): Promise<RateLimiterRes>;
  reward(key: string | number, points?: number, options?: RateLimiterOptions): Promise<RateLimiterRes>;
  block(key: string | number, secDuration: number, options?: RateLimiterOptions): Promise<RateLimiterRes>;
  delete(key: string | number, options?: RateLimiterOptions): Promise<boolean>;
  /** Rejects if rlstore did not answer the PING sent when the limiter was made; err.code 'RLSTORE_AUTH': wrong or missing password. */
  verify(): Promise<void>;
}
