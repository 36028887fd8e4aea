package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.parser.{ParserInterface, SqlStatementSplitResult, TemporalIdentifier}
import org.apache.spark.unsafe.types.TimestampNanosVal

abstract class SparkAggRow extends VariantGetter with BinaryViewGetter {
  def getTimestampLTZNanos(i: Int): TimestampNanosVal =
    if (i < numKeyFields) keyRow.getTimestampLTZNanos(i) else valueAt(i).asInstanceOf[TimestampNanosVal]
  def getTimestampNTZNanos(i: Int): TimestampNanosVal =
    if (i < numKeyFields) keyRow.getTimestampNTZNanos(i) else valueAt(i).asInstanceOf[TimestampNanosVal]
}

/** Spark 4.3 splits statements and parses time-travel identifiers (`t@v3`); ParserInterface's default for
 *  the latter does not ask the delegate, so it is forwarded here. */
abstract class RewritingParser(protected val delegate: ParserInterface)
  extends RoutineParamForwarding with ParameterForwarding {
  override def splitStatements(sqlText: String): SqlStatementSplitResult = delegate.splitStatements(sqlText)
  override def parseTemporalTableIdentifier(sqlText: String): TemporalIdentifier =
    delegate.parseTemporalTableIdentifier(sqlText)
}
