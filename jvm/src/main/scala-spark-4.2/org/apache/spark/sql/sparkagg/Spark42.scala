package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.parser.ParserInterface

abstract class SparkAggRow extends VariantGetter with BinaryViewGetter

abstract class RewritingParser(protected val delegate: ParserInterface)
  extends RoutineParamForwarding with ParameterForwarding
