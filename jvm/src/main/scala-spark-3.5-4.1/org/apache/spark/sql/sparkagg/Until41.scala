package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.FunctionIdentifier

// Up to Spark 4.1 the built-ins and the temporary functions share one key space: the bare name.

private[sparkagg] trait FunctionKeys {
  /** A temporary function's key in a session's registry (as spark.udf registers it). */
  def temporaryFunction(name: String): FunctionIdentifier = FunctionIdentifier(name)

  /** A built-in's key: registered in one session's registry, it replaces the built-in for that session. */
  def builtinFunction(name: String): FunctionIdentifier = FunctionIdentifier(name)
}
