'use strict';

// RateLimiterRes has the shape of rate-limiter-flexible's class of the same
// name, for callers that do not have that package installed.
class RateLimiterRes {
  constructor(remainingPoints = 0, msBeforeNext = 0, consumedPoints = 0, isFirstInDuration = false) {
    this.remainingPoints = remainingPoints;
    this.msBeforeNext = msBeforeNext;
    this.consumedPoints = consumedPoints;
    this.isFirstInDuration = Boolean(isFirstInDuration);
  }

  toJSON() {
    return {
      remainingPoints: this.remainingPoints,
      msBeforeNext: this.msBeforeNext,
      consumedPoints: this.consumedPoints,
      isFirstInDuration: this.isFirstInDuration,
    };
  }

  toString() {
    return JSON.stringify(this.toJSON());
  }
}

module.exports = RateLimiterRes;
